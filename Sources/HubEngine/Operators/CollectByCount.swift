extension Publishers {
    /// Collects upstream values into arrays of a given size, as Combine's `Publishers.CollectByCount`.
    ///
    /// A downstream demand of n becomes an upstream demand of n × `count` (`.unlimited`
    /// stays `.unlimited`), and the demand the downstream returns for an array is
    /// multiplied the same way. When the upstream finishes, a partial array is sent
    /// before `.finished`; when it fails, the partial array is discarded.
    public struct CollectByCount<Upstream: Publisher>: Publisher {
        public typealias Output = [Upstream.Output]
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are collected.
        public let upstream: Upstream
        /// The size of each array (should be positive).
        public let count: Int

        /// Arrays of `count` of `upstream`'s values.
        public init(upstream: Upstream, count: Int) {
            self.upstream = upstream
            self.count = count
        }

        /// Attaches `subscriber` with a fresh buffer.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber, count: count))
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == [Upstream.Output], Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private let downstream: Downstream
            private let count: Int
            private var buffer: [Input] = []
            private var upstream: (any Subscription)?
            private var done = false

            init(downstream: Downstream, count: Int) {
                self.downstream = downstream
                self.count = count
                buffer.reserveCapacity(Swift.max(0, Swift.min(count, 1024)))
            }

            func receive(subscription: any Subscription) {
                guard upstream == nil, !done else {
                    subscription.cancel()
                    return
                }
                upstream = subscription
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard upstream != nil else { return .none }
                buffer.append(input)
                guard buffer.count == count else { return .none }
                let batch = buffer
                buffer.removeAll(keepingCapacity: true)
                let more = downstream.receive(batch)
                guard upstream != nil else { return .none }
                return more * count
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard upstream != nil else { return }
                upstream = nil
                done = true
                if case .finished = completion, !buffer.isEmpty {
                    let batch = buffer
                    buffer = []
                    _ = downstream.receive(batch)
                }
                buffer = []
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, let upstream else { return }
                upstream.request(demand * count)
            }

            func cancel() {
                done = true
                buffer = []
                upstream.take()?.cancel()
            }
        }
    }
}

extension Publisher {
    /// Collects values into arrays of `count` and emits each when full (a partial one at the end).
    public func collect(_ count: Int) -> Publishers.CollectByCount<Self> {
        Publishers.CollectByCount(upstream: self, count: count)
    }
}
