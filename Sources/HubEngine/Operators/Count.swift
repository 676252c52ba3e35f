extension Publishers {
    /// Emits the number of values the upstream produced, when it finishes, as Combine's `Publishers.Count`.
    ///
    /// Demand as ``Publishers/Reduce``: `.unlimited` upstream, the count held until requested.
    public struct Count<Upstream: Publisher>: Publisher {
        public typealias Output = Int
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are counted.
        public let upstream: Upstream

        /// Where the count so far is checkpointed, if it is.
        public let state: OperatorState<Int>?

        /// A count of `upstream`'s values, checkpointed in `state` if given.
        public init(upstream: Upstream, state: OperatorState<Int>? = nil) {
            self.upstream = upstream
            self.state = state
        }

        /// Attaches `subscriber` with a fresh count.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: ReducerSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, initial: 0, mapFailure: { $0 }, state: state, kind: "count"
            ) { result, _ in
                result = result! + 1
                return .proceed
            })
        }
    }
}

extension Publisher {
    /// Emits how many values the upstream produced, once it finishes.
    public func count() -> Publishers.Count<Self> { Publishers.Count(upstream: self) }
}
