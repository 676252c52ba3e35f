import HubValue

extension Publishers {
    /// Emits each successive accumulation with a throwing closure, as Combine's `Publishers.TryScan`.
    ///
    /// Demand passes through unchanged. When the closure throws, the upstream is
    /// cancelled and the downstream fails with the thrown error. Each subscription
    /// starts from `initialResult`, or from the accumulator checkpointed in `state`.
    public struct TryScan<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = any Error

        /// The publisher whose values are accumulated.
        public let upstream: Upstream
        /// The accumulator's first value.
        public let initialResult: Output
        /// Combines the accumulator with the next value; an error it throws ends the stream.
        public let nextPartialResult: (Output, Upstream.Output) throws -> Output
        /// Where the accumulator is checkpointed, if it is.
        public let state: OperatorState<Output>?

        /// A try-scan of `upstream` from `initialResult` with `nextPartialResult`, its
        /// accumulator checkpointed in `state` if given.
        public init(
            upstream: Upstream, initialResult: Output, nextPartialResult: @escaping (Output, Upstream.Output) throws -> Output,
            state: OperatorState<Output>? = nil
        ) {
            self.upstream = upstream
            self.initialResult = initialResult
            self.nextPartialResult = nextPartialResult
            self.state = state
        }

        /// Attaches `subscriber` with a fresh (or restored) accumulator.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let next = nextPartialResult
            let box = StateBox(initialResult)
            if let state {
                state.restore("scan") { snapshot throws(CheckpointError) in box.value = try snapshot.field("acc", state.codec) }
                let encode = state.codec.encode
                state.attach("scan") { [weak box] in box.map { ["acc": encode($0.value)] } }
            }
            upstream.receive(subscriber: ValueFilterSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, mapFailure: { $0 }
            ) { input in
                do {
                    box.value = try next(box.value, input)
                    return .emit(box.value)
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

    /// A try-scan whose accumulator is checkpointed in `state` (see ``Publishers/TryScan``).
    public func tryScan<T>(
        _ initialResult: T, state: OperatorState<T>?, _ nextPartialResult: @escaping (T, Output) throws -> T
    ) -> Publishers.TryScan<Self, T> {
        Publishers.TryScan(upstream: self, initialResult: initialResult, nextPartialResult: nextPartialResult, state: state)
    }
}
