extension Publishers {
    /// Folds all upstream values into one result, emitted when the upstream finishes,
    /// as Combine's `Publishers.Reduce`.
    ///
    /// Requests `.unlimited` from upstream as soon as it is subscribed. The result is
    /// sent once the upstream has finished and the downstream has requested a value;
    /// a result ready before any demand is held until the first request.
    public struct Reduce<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are folded.
        public let upstream: Upstream
        /// The accumulator's first value.
        public let initial: Output
        /// Combines the accumulator with the next value.
        public let nextPartialResult: (Output, Upstream.Output) -> Output
        /// Where the accumulator is checkpointed, if it is.
        public let state: OperatorState<Output>?

        /// A reduction of `upstream` from `initial` with `nextPartialResult`, its accumulator
        /// checkpointed in `state` if given.
        public init(
            upstream: Upstream, initial: Output, nextPartialResult: @escaping (Output, Upstream.Output) -> Output,
            state: OperatorState<Output>? = nil
        ) {
            self.upstream = upstream
            self.initial = initial
            self.nextPartialResult = nextPartialResult
            self.state = state
        }

        /// Attaches `subscriber` with a fresh accumulator.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let next = nextPartialResult
            upstream.receive(subscriber: ReducerSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, initial: initial, mapFailure: { $0 }, state: state
            ) { result, input in
                result = next(result!, input)
                return .proceed
            })
        }
    }
}

extension Publisher {
    /// Folds all values into one, starting from `initialResult`, and emits it when the upstream finishes.
    public func reduce<T>(_ initialResult: T, _ nextPartialResult: @escaping (T, Output) -> T) -> Publishers.Reduce<Self, T> {
        Publishers.Reduce(upstream: self, initial: initialResult, nextPartialResult: nextPartialResult)
    }
}
