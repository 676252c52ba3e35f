import HubValue

extension Publishers {
    /// Emits each successive accumulation of the upstream values, as Combine's `Publishers.Scan`.
    ///
    /// Demand passes through unchanged: one upstream value, one downstream value.
    /// With a `state`, its accumulator is checkpointed (``CheckpointRegistry``): a
    /// subscription restores the accumulator saved there and goes on from it.
    public struct Scan<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are accumulated.
        public let upstream: Upstream
        /// The accumulator's first value.
        public let initialResult: Output
        /// Combines the accumulator with the next value.
        public let nextPartialResult: (Output, Upstream.Output) -> Output
        /// Where the accumulator is checkpointed, if it is.
        public let state: OperatorState<Output>?

        /// A scan of `upstream` from `initialResult` with `nextPartialResult`, its
        /// accumulator checkpointed in `state` if given.
        public init(
            upstream: Upstream, initialResult: Output, nextPartialResult: @escaping (Output, Upstream.Output) -> Output,
            state: OperatorState<Output>? = nil
        ) {
            self.upstream = upstream
            self.initialResult = initialResult
            self.nextPartialResult = nextPartialResult
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, result: initialResult, next: nextPartialResult)
            if let state { Self.checkpoint(inner, in: state) }
            upstream.receive(subscriber: inner)
        }

        /// Restores the accumulator of `inner` from `state` and attaches its saving.
        @usableFromInline
        static func checkpoint<D: Subscriber>(_ inner: Inner<D>, in state: OperatorState<Output>)
        where D.Input == Output, D.Failure == Upstream.Failure {
            state.restore("scan") { snapshot throws(CheckpointError) in inner.result = try snapshot.field("acc", state.codec) }
            let encode = state.codec.encode
            state.attach("scan") { [weak inner] in inner.map { ["acc": encode($0.result)] } }
        }

        @usableFromInline
        internal final class Inner<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Upstream.Failure {
            @usableFromInline typealias Input = Upstream.Output
            @usableFromInline typealias Failure = Upstream.Failure

            @usableFromInline let downstream: Downstream
            @exclusivity(unchecked) @usableFromInline var result: Output
            @usableFromInline let next: (Output, Upstream.Output) -> Output

            @inlinable init(downstream: Downstream, result: Output, next: @escaping (Output, Upstream.Output) -> Output) {
                self.downstream = downstream
                self.result = result
                self.next = next
            }

            @inlinable func receive(subscription: any Subscription) { downstream.receive(subscription: subscription) }
            @inlinable func receive(_ input: Input) -> Subscribers.Demand {
                result = next(result, input)
                return downstream.receive(result)
            }
            @inlinable func receive(completion: Subscribers.Completion<Failure>) { downstream.receive(completion: completion) }
        }
    }
}

extension Publisher {
    /// Emits `nextPartialResult(accumulator, value)` for each value, starting from `initialResult`.
    @inlinable
    public func scan<T>(_ initialResult: T, _ nextPartialResult: @escaping (T, Output) -> T) -> Publishers.Scan<Self, T> {
        Publishers.Scan(upstream: self, initialResult: initialResult, nextPartialResult: nextPartialResult)
    }

    /// A scan whose accumulator is checkpointed in `state` (see ``Publishers/Scan``).
    public func scan<T>(
        _ initialResult: T, state: OperatorState<T>?, _ nextPartialResult: @escaping (T, Output) -> T
    ) -> Publishers.Scan<Self, T> {
        Publishers.Scan(upstream: self, initialResult: initialResult, nextPartialResult: nextPartialResult, state: state)
    }
}
