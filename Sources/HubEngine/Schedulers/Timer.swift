import HubValue

extension Publishers {
    /// A publisher that emits its scheduler's ``Scheduler/now`` every `interval`, as Combine's
    /// `Timer.publish(every:on:in:).autoconnect()` but on any ``Scheduler``.
    ///
    /// Each subscriber gets its own repeating action, started when it subscribes:
    /// the first tick comes `interval` after subscription. A tick that arrives while
    /// the subscriber has no demand is dropped, as Combine's timer does. Cancelling
    /// the subscription cancels the repeating action. The timer never completes.
    ///
    /// HubEngine has no `ConnectablePublisher` yet, so the timer connects on
    /// subscription (it behaves as Combine's autoconnected timer).
    ///
    /// With a `state`, the time left until the next tick is checkpointed: a subscription
    /// restored from it ticks first when that time is up, then every `interval`.
    public struct Timer<Context: Scheduler>: Publisher {
        public typealias Output = SchedulerTime
        public typealias Failure = Never

        /// The interval between ticks.
        public let interval: Duration
        /// The scheduler that runs the ticks.
        public let scheduler: Context

        /// Where the time to the next tick is checkpointed, if it is.
        public let state: OperatorStateSlot?

        /// A timer that ticks every `interval` on `scheduler`, its phase checkpointed in `state` if given.
        public init(every interval: Duration, scheduler: Context, state: OperatorStateSlot? = nil) {
            self.interval = interval
            self.scheduler = scheduler
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber)
            var first = interval
            if let slot = state {
                let state = OperatorState(slot: slot, codec: StateCodec<Void>.void)
                state.restore("timer") { snapshot throws(CheckpointError) in
                    first = .nanoseconds(Swift.max(0, try snapshot.int("remaining")))
                }
                let scheduler = self.scheduler
                state.attach("timer") { [weak inner] in
                    guard let next = inner?.nextTick else { return nil }
                    return ["remaining": .int(Swift.max(0, next.nanoseconds - scheduler.now.nanoseconds))]
                }
            }
            subscriber.receive(subscription: inner)
            inner.start(scheduler: scheduler, first: first, interval: interval)
        }

        private final class Inner<Downstream: Subscriber>: Subscription
        where Downstream.Input == SchedulerTime, Downstream.Failure == Never {
            private var downstream: Downstream?
            private var demand = Subscribers.Demand.none
            private var ticker: (any Cancellable)?
            private var interval = Duration.zero
            /// When the next tick is due (while running).
            fileprivate private(set) var nextTick: SchedulerTime?

            init(downstream: Downstream) { self.downstream = downstream }

            func start(scheduler: Context, first: Duration, interval: Duration) {
                guard downstream != nil else { return }
                self.interval = interval
                let due = scheduler.now.advanced(by: first)
                nextTick = due
                ticker = scheduler.schedule(after: due, interval: interval) {
                    self.tick(scheduler.now)
                }
                if downstream == nil {
                    ticker.take()?.cancel()
                    nextTick = nil
                }
            }

            private func tick(_ time: SchedulerTime) {
                if let due = nextTick { nextTick = due.advanced(by: interval) }
                guard let downstream, demand > 0 else { return }
                demand -= 1
                let more = downstream.receive(time)
                if more > 0, self.downstream != nil { demand += more }
            }

            func request(_ demand: Subscribers.Demand) {
                guard downstream != nil else { return }
                self.demand += demand
            }

            func cancel() {
                guard downstream.take() != nil else { return }
                nextTick = nil
                ticker.take()?.cancel()
            }
        }
    }
}

extension Scheduler {
    /// A timer publisher that emits this scheduler's `now` every `interval` from subscription on.
    public func timerPublisher(every interval: Duration) -> Publishers.Timer<Self> {
        Publishers.Timer(every: interval, scheduler: self)
    }
}
