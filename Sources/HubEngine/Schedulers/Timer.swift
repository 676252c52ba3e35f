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
    public struct Timer<Context: Scheduler>: Publisher {
        public typealias Output = SchedulerTime
        public typealias Failure = Never

        /// The interval between ticks.
        public let interval: Duration
        /// The scheduler that runs the ticks.
        public let scheduler: Context

        /// A timer that ticks every `interval` on `scheduler`.
        public init(every interval: Duration, scheduler: Context) {
            self.interval = interval
            self.scheduler = scheduler
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber)
            subscriber.receive(subscription: inner)
            inner.start(scheduler: scheduler, interval: interval)
        }

        private final class Inner<Downstream: Subscriber>: Subscription
        where Downstream.Input == SchedulerTime, Downstream.Failure == Never {
            private var downstream: Downstream?
            private var demand = Subscribers.Demand.none
            private var ticker: (any Cancellable)?

            init(downstream: Downstream) { self.downstream = downstream }

            func start(scheduler: Context, interval: Duration) {
                guard downstream != nil else { return }
                ticker = scheduler.schedule(after: scheduler.now.advanced(by: interval), interval: interval) {
                    self.tick(scheduler.now)
                }
                if downstream == nil { ticker.take()?.cancel() }
            }

            private func tick(_ time: SchedulerTime) {
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
