extension Publishers {
    /// Ends the stream when the upstream stays silent for longer than `interval`, as Combine's
    /// `Publishers.Timeout`.
    ///
    /// The clock starts on subscription (once the downstream has its subscription)
    /// and restarts on the first request and on every value. Values and the upstream completion are delivered through the
    /// scheduler (a hop at the current time), as in OpenCombine; demand passes
    /// through. On timeout the upstream is cancelled and the downstream receives
    /// `customError()` as a failure, or `.finished` without `customError`. The
    /// timer is cancelled on completion, on timeout and on cancel, and so are the
    /// hops not yet run on timeout and cancel.
    public struct Timeout<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher watched.
        public let upstream: Upstream
        /// The longest silence allowed.
        public let interval: Duration
        /// The scheduler that times the silence and delivers the events.
        public let scheduler: Context
        /// The error sent on timeout; `nil` finishes normally instead.
        public let customError: (() -> Failure)?

        /// A timeout of `upstream` after `interval` of silence on `scheduler`.
        public init(upstream: Upstream, interval: Duration, scheduler: Context, customError: (() -> Failure)?) {
            self.upstream = upstream
            self.interval = interval
            self.scheduler = scheduler
            self.customError = customError
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber, interval: interval, scheduler: scheduler, customError: customError))
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private enum State {
                case awaitingSubscription
                case subscribed(any Subscription)
                case terminal
            }

            private let downstream: Downstream
            private let interval: Duration
            private let scheduler: Context
            private let customError: (() -> Failure)?
            private var state = State.awaitingSubscription
            private var didTimeout = false
            private var timer: (any Cancellable)?
            private var requestedOnce = false
            private let hops = ScheduledActions()

            init(downstream: Downstream, interval: Duration, scheduler: Context, customError: (() -> Failure)?) {
                self.downstream = downstream
                self.interval = interval
                self.scheduler = scheduler
                self.customError = customError
            }

            private func restartClock() {
                timer.take()?.cancel()
                var ran = false
                let cancellable = scheduler.schedule(after: scheduler.now.advanced(by: interval), interval: interval) {
                    ran = true
                    self.timedOut()
                }
                if ran { cancellable.cancel() } else { timer = cancellable }
            }

            func receive(subscription: any Subscription) {
                guard case .awaitingSubscription = state else {
                    subscription.cancel()
                    return
                }
                state = .subscribed(subscription)
                downstream.receive(subscription: self)
                // The clock starts on subscription (a first request from inside the downstream's
                // `receive(subscription:)` has already started it). OpenCombine starts it just before
                // handing the subscription downstream: the due time is the same, but here an
                // immediate scheduler cannot deliver the timeout before the subscription.
                if case .subscribed = state, timer == nil, !didTimeout { restartClock() }
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard !didTimeout, case .subscribed = state else { return .none }
                restartClock()
                hops.schedule(on: scheduler, after: scheduler.now) { self.deliver(input) }
                return .none
            }

            private func deliver(_ input: Input) {
                guard !didTimeout, case .subscribed(let subscription) = state else { return }
                let more = downstream.receive(input)
                if more > 0 { subscription.request(more) }
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard case .subscribed = state else { return }
                timer.take()?.cancel()
                hops.schedule(on: scheduler, after: scheduler.now) {
                    guard case .subscribed = self.state else { return }
                    self.state = .terminal
                    self.downstream.receive(completion: completion)
                }
            }

            func request(_ demand: Subscribers.Demand) {
                guard case .subscribed(let subscription) = state else { return }
                if !requestedOnce {
                    requestedOnce = true
                    restartClock()
                    // An immediate scheduler may have timed out already.
                    guard case .subscribed = state else { return }
                }
                subscription.request(demand)
            }

            func cancel() {
                guard case .subscribed(let subscription) = state else { return }
                state = .terminal
                timer.take()?.cancel()
                hops.cancelAll()
                subscription.cancel()
            }

            private func timedOut() {
                guard !didTimeout, case .subscribed(let subscription) = state else { return }
                didTimeout = true
                state = .terminal
                timer.take()?.cancel()
                hops.cancelAll()
                subscription.cancel()
                downstream.receive(completion: customError.map { .failure($0()) } ?? .finished)
            }
        }
    }
}

extension Publisher {
    /// Ends the stream if the upstream sends nothing for `interval` on `scheduler`: with
    /// `customError()` as a failure if given, else `.finished`.
    public func timeout<S: Scheduler>(
        _ interval: Duration, scheduler: S, customError: (() -> Failure)? = nil
    ) -> Publishers.Timeout<Self, S> {
        Publishers.Timeout(upstream: self, interval: interval, scheduler: scheduler, customError: customError)
    }
}
