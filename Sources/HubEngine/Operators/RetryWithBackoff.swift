extension Publishers {
    /// Resubscribes to its upstream after every failure, forever, waiting between attempts on a
    /// scheduler: the seed's `retry(.max)` made safe for a shared event loop, where an upstream
    /// that fails at once (`Fail`) would otherwise be resubscribed in a tight loop.
    ///
    /// - The first resubscription comes `initialDelay` after the failure; each further failure
    ///   without a value in between doubles the delay, up to `maximumDelay`. A value resets it.
    /// - Demand: the downstream's requests pass through; the demand outstanding when the
    ///   upstream failed (requested and not delivered) is requested from the next subscription.
    /// - Finishing finishes it, and so does a failure that ``isRetryable`` refuses (passed on
    ///   as is); cancelling cancels the upstream or the pending resubscription.
    /// - Nothing is scheduled while the upstream is live: the only timer is the one of a
    ///   pending resubscription, so a subscription holds at most one scheduled action.
    public struct RetryWithBackoff<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher resubscribed after each failure.
        public let upstream: Upstream
        /// The wait before the first resubscription.
        public let initialDelay: Duration
        /// The longest wait.
        public let maximumDelay: Duration
        /// Where the waits are scheduled.
        public let scheduler: Context
        /// Whether a failure is retried; one that is not ends the publisher with it.
        public let isRetryable: (Failure) -> Bool

        /// Retries `upstream` forever, waiting `initialDelay` (doubling to `maximumDelay`) between
        /// attempts, after every failure `isRetryable` accepts (by default every failure).
        public init(
            upstream: Upstream, initialDelay: Duration, maximumDelay: Duration, scheduler: Context,
            isRetryable: @escaping (Failure) -> Bool = { _ in true }
        ) {
            self.upstream = upstream
            self.initialDelay = Swift.max(initialDelay, .nanoseconds(1))
            self.maximumDelay = Swift.max(maximumDelay, self.initialDelay)
            self.scheduler = scheduler
            self.isRetryable = isRetryable
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(publisher: self, downstream: subscriber)
            subscriber.receive(subscription: inner)
            inner.subscribe()
        }

        private final class Inner<Downstream: Subscriber>: Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {

            private let publisher: RetryWithBackoff
            private var downstream: Downstream?
            private var subscription: (any Subscription)?
            private var pending: (any Cancellable)?
            /// Requested by the downstream and not delivered yet.
            private var demand = Subscribers.Demand.none
            private var delay: Duration
            /// The upstream subscription being set up or live (not failed and waiting).
            private var attempt = 0

            init(publisher: RetryWithBackoff, downstream: Downstream) {
                self.publisher = publisher
                self.downstream = downstream
                delay = publisher.initialDelay
            }

            func subscribe() {
                guard downstream != nil else { return }
                attempt += 1
                publisher.upstream.receive(subscriber: Side(inner: self, attempt: attempt))
            }

            fileprivate func received(subscription: any Subscription, attempt: Int) {
                guard downstream != nil, attempt == self.attempt, self.subscription == nil else {
                    subscription.cancel()
                    return
                }
                self.subscription = subscription
                if demand > 0 { subscription.request(demand) }
            }

            fileprivate func received(_ input: Upstream.Output, attempt: Int) -> Subscribers.Demand {
                guard let downstream, attempt == self.attempt else { return .none }
                delay = publisher.initialDelay
                demand -= 1
                let more = downstream.receive(input)
                demand += more
                return more
            }

            fileprivate func received(completion: Subscribers.Completion<Failure>, attempt: Int) {
                guard downstream != nil, attempt == self.attempt else { return }
                subscription = nil
                switch completion {
                case .finished:
                    downstream.take()?.receive(completion: completion)
                case let .failure(error) where !publisher.isRetryable(error):
                    downstream.take()?.receive(completion: completion)
                case .failure:
                    let wait = delay
                    delay = Swift.min(delay * 2, publisher.maximumDelay)
                    self.attempt += 1  // nothing more from the failed subscription
                    pending = publisher.scheduler.schedule(after: publisher.scheduler.now.advanced(by: wait)) { [weak self] in
                        guard let self else { return }
                        self.pending = nil
                        self.subscribe()
                    }
                }
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, downstream != nil else { return }
                self.demand += demand
                subscription?.request(demand)
            }

            func cancel() {
                guard downstream.take() != nil else { return }
                pending.take()?.cancel()
                subscription.take()?.cancel()
            }
        }

        private struct Side<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            let inner: Inner<Downstream>
            let attempt: Int
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { inner.received(subscription: subscription, attempt: attempt) }
            func receive(_ input: Input) -> Subscribers.Demand { inner.received(input, attempt: attempt) }
            func receive(completion: Subscribers.Completion<Failure>) { inner.received(completion: completion, attempt: attempt) }
        }
    }
}

extension Publisher {
    /// Resubscribes after every failure, forever, waiting `initialDelay` (doubling up to
    /// `maximumDelay`, reset by a value) between attempts; a failure `isRetryable` refuses
    /// ends it. See ``Publishers/RetryWithBackoff``.
    public func retry<S: Scheduler>(
        backoff initialDelay: Duration, maximum maximumDelay: Duration, scheduler: S,
        isRetryable: @escaping (Failure) -> Bool = { _ in true }
    ) -> Publishers.RetryWithBackoff<Self, S> {
        Publishers.RetryWithBackoff(
            upstream: self, initialDelay: initialDelay, maximumDelay: maximumDelay, scheduler: scheduler,
            isRetryable: isRetryable)
    }
}
