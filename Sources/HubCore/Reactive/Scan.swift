extension Publishers {
    /// Emits each successive accumulation of the upstream values, as Combine's `Publishers.Scan`.
    ///
    /// Demand passes through unchanged: one upstream value, one downstream value.
    public struct Scan<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are accumulated.
        public let upstream: Upstream
        /// The accumulator's first value.
        public let initialResult: Output
        /// Combines the accumulator with the next value.
        public let nextPartialResult: (Output, Upstream.Output) -> Output

        /// A scan of `upstream` from `initialResult` with `nextPartialResult`.
        public init(upstream: Upstream, initialResult: Output, nextPartialResult: @escaping (Output, Upstream.Output) -> Output) {
            self.upstream = upstream
            self.initialResult = initialResult
            self.nextPartialResult = nextPartialResult
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, result: initialResult, next: nextPartialResult))
        }

        private final class Inner<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private let downstream: Downstream
            private var result: Output
            private let next: (Output, Upstream.Output) -> Output

            init(downstream: Downstream, result: Output, next: @escaping (Output, Upstream.Output) -> Output) {
                self.downstream = downstream
                self.result = result
                self.next = next
            }

            func receive(subscription: any Subscription) { downstream.receive(subscription: subscription) }
            func receive(_ input: Input) -> Subscribers.Demand {
                result = next(result, input)
                return downstream.receive(result)
            }
            func receive(completion: Subscribers.Completion<Failure>) { downstream.receive(completion: completion) }
        }
    }
}

extension Publisher {
    /// Emits `nextPartialResult(accumulator, value)` for each value, starting from `initialResult`.
    public func scan<T>(_ initialResult: T, _ nextPartialResult: @escaping (T, Output) -> T) -> Publishers.Scan<Self, T> {
        Publishers.Scan(upstream: self, initialResult: initialResult, nextPartialResult: nextPartialResult)
    }
}
