import HubValue

extension Publishers {
    /// Emits a value only after `dueTime` has passed without another value, as Combine's
    /// `Publishers.Debounce`.
    ///
    /// Demand: it requests `.unlimited` upstream (after handing its subscription
    /// downstream), as Combine does, and delivers a settled value only if the
    /// downstream has demand at that moment; otherwise the value is dropped.
    /// Completion cancels the pending timer, drops the pending value (as in
    /// Combine/OpenCombine) and is delivered through the scheduler. Cancel
    /// cancels the timer and the upstream, and suppresses a completion not yet delivered.
    ///
    /// With a `state`, the pending value and the time its timer had left are checkpointed:
    /// a subscription restores them and emits the value once that time has passed (unless
    /// a newer value comes first).
    public struct Debounce<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are debounced.
        public let upstream: Upstream
        /// How long the upstream must stay quiet before the last value is emitted.
        public let dueTime: Duration
        /// The scheduler that times the quiet period and delivers the events.
        public let scheduler: Context

        /// Where the pending value is checkpointed, if it is.
        public let state: OperatorState<Output>?

        /// A debounce of `upstream` by `dueTime` on `scheduler`, checkpointed in `state` if given.
        public init(upstream: Upstream, dueTime: Duration, scheduler: Context, state: OperatorState<Output>? = nil) {
            self.upstream = upstream
            self.dueTime = dueTime
            self.scheduler = scheduler
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, dueTime: dueTime, scheduler: scheduler)
            if let state {
                let codec = state.codec
                state.restore("debounce") { snapshot throws(CheckpointError) in
                    let value = try snapshot.field("pending", codec)
                    inner.restored = (value, .nanoseconds(Swift.max(0, try snapshot.int("remaining"))))
                }
                state.attach("debounce") { [weak inner] in inner?.checkpoint(codec) }
            }
            upstream.receive(subscriber: inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private enum State {
                case awaitingSubscription
                case subscribed(any Subscription)
                case pendingTerminal
                case terminal
            }

            private let downstream: Downstream
            private let dueTime: Duration
            private let scheduler: Context
            private var state = State.awaitingSubscription
            private var pendingValue: Input?
            /// When the pending value is due.
            private var dueAt: SchedulerTime?
            /// A pending value restored from a checkpoint, with the time its timer had left.
            fileprivate var restored: (value: Input, remaining: Duration)?
            private var timer: (any Cancellable)?
            private let completionHop = ScheduledActions()
            private var demand = Subscribers.Demand.none

            init(downstream: Downstream, dueTime: Duration, scheduler: Context) {
                self.downstream = downstream
                self.dueTime = dueTime
                self.scheduler = scheduler
            }

            func receive(subscription: any Subscription) {
                guard case .awaitingSubscription = state else {
                    subscription.cancel()
                    return
                }
                state = .subscribed(subscription)
                downstream.receive(subscription: self)
                if let pending = restored.take(), case .subscribed = state { wait(pending.value, for: pending.remaining) }
                subscription.request(.unlimited)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard case .subscribed = state else { return .none }
                wait(input, for: dueTime)
                return .none
            }

            /// Holds `input` as the pending value, due `interval` from now.
            private func wait(_ input: Input, for interval: Duration) {
                pendingValue = input
                timer.take()?.cancel()
                let due = scheduler.now.advanced(by: interval)
                dueAt = due
                var ran = false
                let cancellable = scheduler.schedule(after: due) {
                    ran = true
                    self.due()
                }
                if !ran { timer = cancellable }
            }

            /// The pending value and its time left, for a checkpoint (`nil`: nothing pending, or ended).
            fileprivate func checkpoint(_ codec: StateCodec<Input>) -> Value.Object? {
                guard case .subscribed = state, let pendingValue, let dueAt else { return nil }
                let remaining = Swift.max(0, dueAt.nanoseconds - scheduler.now.nanoseconds)
                return ["pending": codec.encode(pendingValue), "remaining": .int(remaining)]
            }

            private func due() {
                timer = nil
                dueAt = nil
                guard case .subscribed = state, let value = pendingValue.take() else { return }
                guard demand > 0 else { return }
                demand -= 1
                let more = downstream.receive(value)
                if more > 0, case .subscribed = state { demand += more }
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard case .subscribed = state else { return }
                state = .pendingTerminal
                timer.take()?.cancel()
                pendingValue = nil
                completionHop.schedule(on: scheduler, after: scheduler.now) {
                    guard case .pendingTerminal = self.state else { return }
                    self.state = .terminal
                    self.downstream.receive(completion: completion)
                }
            }

            func request(_ demand: Subscribers.Demand) {
                guard case .subscribed = state else { return }
                self.demand += demand
            }

            func cancel() {
                switch state {
                case .subscribed(let subscription):
                    state = .terminal
                    timer.take()?.cancel()
                    pendingValue = nil
                    subscription.cancel()
                case .pendingTerminal:
                    state = .terminal
                    completionHop.cancelAll()
                case .awaitingSubscription, .terminal:
                    break
                }
            }
        }
    }
}

extension Publisher {
    /// Emits a value only after `dueTime` has passed on `scheduler` without a newer value.
    public func debounce<S: Scheduler>(for dueTime: Duration, scheduler: S) -> Publishers.Debounce<Self, S> {
        Publishers.Debounce(upstream: self, dueTime: dueTime, scheduler: scheduler)
    }
}
