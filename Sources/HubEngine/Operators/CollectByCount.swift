import HubValue

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

        /// Where the values of the array being filled are checkpointed, if they are.
        public let state: OperatorState<Upstream.Output>?

        /// Arrays of `count` of `upstream`'s values, the partial one checkpointed in `state` if given.
        public init(upstream: Upstream, count: Int, state: OperatorState<Upstream.Output>? = nil) {
            self.upstream = upstream
            self.count = count
            self.state = state
        }

        /// Attaches `subscriber` with a fresh (or restored) buffer.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, count: count)
            if let state {
                let codec = state.codec.array
                state.restore("collectByCount") { snapshot throws(CheckpointError) in
                    let restored = try snapshot.field("buffer", codec)
                    guard restored.count < count else {
                        throw CheckpointError(.malformed, "collect(\(count)) restored \(restored.count) values: a full array")
                    }
                    inner.buffer = restored
                    // The upstream was asked for the restored values already.
                    inner.owed = restored.count
                }
                state.attach("collectByCount") { [weak inner] in
                    guard let inner, !inner.done else { return nil }
                    return ["buffer": codec.encode(inner.buffer)]
                }
            }
            upstream.receive(subscriber: inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == [Upstream.Output], Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private let downstream: Downstream
            private let count: Int
            fileprivate var buffer: [Input] = []
            private var upstream: (any Subscription)?
            fileprivate private(set) var done = false
            /// Upstream demand already satisfied by restored values: taken off the next requests.
            fileprivate var owed = 0

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
                let wanted = (demand * count).less(owed: &owed)
                if wanted > 0 { upstream.request(wanted) }
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
