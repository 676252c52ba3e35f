extension Publishers {
    /// Collects all upstream values into one array, emitted when the upstream finishes,
    /// as Combine's `Publishers.Collect`.
    ///
    /// Demand as ``Publishers/Reduce``: `.unlimited` upstream, the array held until requested.
    /// A failure discards the collected values.
    public struct Collect<Upstream: Publisher>: Publisher {
        public typealias Output = [Upstream.Output]
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are collected.
        public let upstream: Upstream

        /// Where the values collected so far are checkpointed, if they are.
        public let state: OperatorState<Upstream.Output>?

        /// A collection of all of `upstream`'s values, checkpointed in `state` if given.
        public init(upstream: Upstream, state: OperatorState<Upstream.Output>? = nil) {
            self.upstream = upstream
            self.state = state
        }

        /// Attaches `subscriber` with a fresh, empty buffer.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: ReducerSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, initial: [], mapFailure: { $0 },
                state: state.map { OperatorState(slot: $0.slot, codec: $0.codec.array) }, kind: "collect"
            ) { result, input in
                result?.append(input)
                return .proceed
            })
        }
    }
}

extension Publisher {
    /// Collects every value and emits them as one array when the upstream finishes.
    public func collect() -> Publishers.Collect<Self> { Publishers.Collect(upstream: self) }
}
