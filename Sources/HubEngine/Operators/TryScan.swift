extension Publishers {
    /// Emits each successive accumulation with a throwing closure, as Combine's `Publishers.TryScan`.
    ///
    /// Demand passes through unchanged. When the closure throws, the upstream is
    /// cancelled and the downstream fails with the thrown error. Each subscription
    /// starts from `initialResult`.
    public struct TryScan<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = any Error

        /// The publisher whose values are accumulated.
        public let upstream: Upstream
        /// The accumulator's first value.
        public let initialResult: Output
        /// Combines the accumulator with the next value; an error it throws ends the stream.
        public let nextPartialResult: (Output, Upstream.Output) throws -> Output

        /// A try-scan of `upstream` from `initialResult` with `nextPartialResult`.
        public init(upstream: Upstream, initialResult: Output, nextPartialResult: @escaping (Output, Upstream.Output) throws -> Output) {
            self.upstream = upstream
            self.initialResult = initialResult
            self.nextPartialResult = nextPartialResult
        }

        /// Attaches `subscriber` with a fresh accumulator.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let next = nextPartialResult
            var result = initialResult
            upstream.receive(subscriber: ValueFilterSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, mapFailure: { $0 }
            ) { input in
                do {
                    result = try next(result, input)
                    return .emit(result)
                } catch {
                    return .fail(error)
                }
            })
        }
    }
}

extension Publisher {
    /// Emits `nextPartialResult(accumulator, value)` for each value, starting from `initialResult`;
    /// a thrown error cancels upstream and fails downstream.
    public func tryScan<T>(_ initialResult: T, _ nextPartialResult: @escaping (T, Output) throws -> T) -> Publishers.TryScan<Self, T> {
        Publishers.TryScan(upstream: self, initialResult: initialResult, nextPartialResult: nextPartialResult)
    }
}
