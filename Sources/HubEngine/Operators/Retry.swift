extension Publishers {
    /// Resubscribes to the upstream when it fails, up to a number of times, as Combine's
    /// `Publishers.Retry`.
    ///
    /// The downstream sees one subscription throughout. The downstream demand
    /// still outstanding when the upstream fails is requested from the new
    /// upstream subscription, so the demand carries over. After the last retry the
    /// failure is delivered. `retries == nil` retries for ever.
    public struct Retry<Upstream: Publisher>: Publisher {
        /// The values published.
        public typealias Output = Upstream.Output
        /// The error published.
        public typealias Failure = Upstream.Failure

        /// The publisher resubscribed to.
        public let upstream: Upstream
        /// How many times to resubscribe; `nil` for no limit.
        public let retries: Int?

        /// Retries `upstream` up to `retries` times (`nil`: without limit).
        public init(upstream: Upstream, retries: Int?) {
            self.upstream = upstream
            self.retries = retries
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(upstream: upstream, retries: retries, downstream: subscriber))
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private let upstream: Upstream
            /// Retries left; `nil` for no limit.
            private var remaining: Int?
            /// `nil` once cancelled or completed.
            private var downstream: Downstream?
            private var subscription: (any Subscription)?
            private var downstreamSubscribed = false
            private var demand = Subscribers.Demand.none
            /// True while resubscribing; a failure meanwhile asks the loop for another round.
            private var resubscribing = false
            private var needsResubscribe = false

            init(upstream: Upstream, retries: Int?, downstream: Downstream) {
                self.upstream = upstream
                self.remaining = retries
                self.downstream = downstream
            }

            func receive(subscription: any Subscription) {
                guard let downstream, self.subscription == nil else {
                    subscription.cancel()
                    return
                }
                self.subscription = subscription
                // The demand outstanding before this subscription; what the downstream
                // requests from inside `receive(subscription:)` goes straight to it.
                let outstanding = demand
                if !downstreamSubscribed {
                    downstreamSubscribed = true
                    downstream.receive(subscription: self)
                }
                if outstanding > 0, self.subscription != nil { subscription.request(outstanding) }
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard let downstream else { return .none }
                demand -= 1
                let more = downstream.receive(input)
                guard more > 0 else { return .none }
                demand += more
                subscription?.request(more)
                return .none
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard downstream != nil else { return }
                if case .failure = completion, remaining.map({ $0 > 0 }) ?? true {
                    subscription = nil
                    if let left = remaining { remaining = left - 1 }
                    if resubscribing {
                        needsResubscribe = true
                        return
                    }
                    resubscribing = true
                    repeat {
                        needsResubscribe = false
                        upstream.receive(subscriber: self)
                    } while needsResubscribe && downstream != nil
                    resubscribing = false
                    return
                }
                subscription = nil
                downstream.take()?.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, downstream != nil else { return }
                self.demand += demand
                subscription?.request(demand)
            }

            func cancel() {
                guard downstream.take() != nil else { return }
                subscription.take()?.cancel()
            }
        }
    }
}

extension Publishers.Retry: Equatable where Upstream: Equatable {}

extension Publisher {
    /// Resubscribes to this publisher up to `retries` times when it fails.
    public func retry(_ retries: Int) -> Publishers.Retry<Self> {
        Publishers.Retry(upstream: self, retries: retries)
    }
}
