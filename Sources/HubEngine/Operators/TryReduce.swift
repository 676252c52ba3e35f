extension Publishers {
    /// Folds all upstream values into one result with a throwing closure, as Combine's
    /// `Publishers.TryReduce`.
    ///
    /// Demand as ``Publishers/Reduce``. When the closure throws, the upstream is cancelled
    /// and the downstream fails at once with the thrown error.
    public struct TryReduce<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = any Error

        /// The publisher whose values are folded.
        public let upstream: Upstream
        /// The accumulator's first value.
        public let initial: Output
        /// Combines the accumulator with the next value; an error it throws ends the stream.
        public let nextPartialResult: (Output, Upstream.Output) throws -> Output
        /// Where the accumulator is checkpointed, if it is.
        public let state: OperatorState<Output>?

        /// A try-reduction of `upstream` from `initial` with `nextPartialResult`, its
        /// accumulator checkpointed in `state` if given.
        public init(
            upstream: Upstream, initial: Output, nextPartialResult: @escaping (Output, Upstream.Output) throws -> Output,
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
                do {
                    result = try next(result!, input)
                    return .proceed
                } catch {
                    return .fail(error)
                }
            })
        }
    }
}

extension Publisher {
    /// Folds all values into one with a throwing closure; a thrown error cancels upstream and fails downstream.
    public func tryReduce<T>(_ initialResult: T, _ nextPartialResult: @escaping (T, Output) throws -> T) -> Publishers.TryReduce<Self, T> {
        Publishers.TryReduce(upstream: self, initial: initialResult, nextPartialResult: nextPartialResult)
    }
}
