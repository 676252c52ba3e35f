extension Publishers {
    /// Emits, for each upstream value, the time elapsed since the previous value (or since
    /// subscription, for the first), as Combine's `Publishers.MeasureInterval`.
    ///
    /// Demand passes through unchanged; completion is forwarded at once.
    public struct MeasureInterval<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Duration
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are timed.
        public let upstream: Upstream
        /// The scheduler whose clock measures.
        public let scheduler: Context

        /// A measure of the intervals between `upstream`'s values on `scheduler`'s clock.
        public init(upstream: Upstream, scheduler: Context) {
            self.upstream = upstream
            self.scheduler = scheduler
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber, scheduler: scheduler))
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Duration, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private let downstream: Downstream
            private let scheduler: Context
            private var subscription: (any Subscription)?
            private var done = false
            private var last: SchedulerTime?

            init(downstream: Downstream, scheduler: Context) {
                self.downstream = downstream
                self.scheduler = scheduler
            }

            func receive(subscription: any Subscription) {
                guard self.subscription == nil, !done else {
                    subscription.cancel()
                    return
                }
                self.subscription = subscription
                last = scheduler.now
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard let subscription, let previous = last else { return .none }
                let now = scheduler.now
                last = now
                let more = downstream.receive(previous.distance(to: now))
                if more > 0, self.subscription != nil { subscription.request(more) }
                return .none
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard subscription.take() != nil else { return }
                done = true
                last = nil
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                subscription?.request(demand)
            }

            func cancel() {
                guard let subscription = subscription.take() else { return }
                done = true
                last = nil
                subscription.cancel()
            }
        }
    }
}

extension Publisher {
    /// Emits the time between successive values (the first measured from subscription) on `scheduler`'s clock.
    public func measureInterval<S: Scheduler>(using scheduler: S) -> Publishers.MeasureInterval<Self, S> {
        Publishers.MeasureInterval(upstream: self, scheduler: scheduler)
    }
}
