extension Publishers {
    /// Delivers every value and the completion `interval` later on a scheduler, as Combine's
    /// `Publishers.Delay`.
    ///
    /// Demand passes through: the downstream's requests go upstream unchanged, and
    /// the demand a delayed value's delivery returns is requested upstream then.
    /// Both `.finished` and a failure are delayed by `interval` too, after the
    /// values already in flight (as OpenCombine). Cancel cancels every scheduled
    /// delivery and the upstream; a cancel after the upstream completed (while the
    /// completion is in flight) suppresses it.
    public struct Delay<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose events are delayed.
        public let upstream: Upstream
        /// How long each event is delayed.
        public let interval: Duration
        /// The scheduler that delivers the events.
        public let scheduler: Context

        /// A delay of `upstream`'s events by `interval` on `scheduler`.
        public init(upstream: Upstream, interval: Duration, scheduler: Context) {
            self.upstream = upstream
            self.interval = interval
            self.scheduler = scheduler
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber, interval: interval, scheduler: scheduler))
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private enum State {
                case awaitingSubscription
                case subscribed(any Subscription)
                case pendingTerminal(any Subscription)
                case terminal

                var subscription: (any Subscription)? {
                    switch self {
                    case .subscribed(let s), .pendingTerminal(let s): return s
                    case .awaitingSubscription, .terminal: return nil
                    }
                }
            }

            private let downstream: Downstream
            private let interval: Duration
            private let scheduler: Context
            private var state = State.awaitingSubscription
            private let deliveries = ScheduledActions()

            init(downstream: Downstream, interval: Duration, scheduler: Context) {
                self.downstream = downstream
                self.interval = interval
                self.scheduler = scheduler
            }

            private var dueTime: SchedulerTime { scheduler.now.advanced(by: interval) }

            func receive(subscription: any Subscription) {
                guard case .awaitingSubscription = state else {
                    subscription.cancel()
                    return
                }
                state = .subscribed(subscription)
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard case .subscribed = state else { return .none }
                deliveries.schedule(on: scheduler, after: dueTime) { self.deliver(input) }
                return .none
            }

            private func deliver(_ input: Input) {
                guard state.subscription != nil else { return }
                let more = downstream.receive(input)
                if more > 0 { state.subscription?.request(more) }
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard case .subscribed(let subscription) = state else { return }
                state = .pendingTerminal(subscription)
                deliveries.schedule(on: scheduler, after: dueTime) {
                    guard case .pendingTerminal = self.state else { return }
                    self.state = .terminal
                    self.downstream.receive(completion: completion)
                }
            }

            func request(_ demand: Subscribers.Demand) {
                guard case .subscribed(let subscription) = state else { return }
                subscription.request(demand)
            }

            func cancel() {
                switch state {
                case .subscribed(let subscription):
                    state = .terminal
                    deliveries.cancelAll()
                    subscription.cancel()
                case .pendingTerminal:
                    state = .terminal
                    deliveries.cancelAll()
                case .awaitingSubscription, .terminal:
                    break
                }
            }
        }
    }
}

extension Publisher {
    /// Delivers every value and the completion `interval` later on `scheduler`.
    public func delay<S: Scheduler>(for interval: Duration, scheduler: S) -> Publishers.Delay<Self, S> {
        Publishers.Delay(upstream: self, interval: interval, scheduler: scheduler)
    }
}
