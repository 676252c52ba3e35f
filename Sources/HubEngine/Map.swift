extension Publishers {
    /// Transforms each value with a closure, as Combine's `Publishers.Map`.
    ///
    /// Demand passes through unchanged: the upstream subscription is handed to
    /// the downstream as it is.
    public struct Map<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are transformed.
        public let upstream: Upstream
        /// The transformation.
        public let transform: (Upstream.Output) -> Output

        /// A map of `upstream` by `transform`.
        public init(upstream: Upstream, transform: @escaping (Upstream.Output) -> Output) {
            self.upstream = upstream
            self.transform = transform
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber, transform: transform))
        }

        @usableFromInline
        internal struct Inner<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Upstream.Failure {
            @usableFromInline typealias Input = Upstream.Output
            @usableFromInline typealias Failure = Upstream.Failure

            @usableFromInline let downstream: Downstream
            @usableFromInline let transform: (Upstream.Output) -> Output

            @inlinable init(downstream: Downstream, transform: @escaping (Upstream.Output) -> Output) {
                self.downstream = downstream
                self.transform = transform
                self.combineIdentifier = CombineIdentifier()
            }
            @usableFromInline let combineIdentifier: CombineIdentifier


            @inlinable func receive(subscription: any Subscription) { downstream.receive(subscription: subscription) }
            @inlinable func receive(_ input: Input) -> Subscribers.Demand { downstream.receive(transform(input)) }
            @inlinable func receive(completion: Subscribers.Completion<Failure>) { downstream.receive(completion: completion) }
        }
    }
}

extension Publisher {
    /// Transforms each value with `transform`.
    @inlinable
    public func map<T>(_ transform: @escaping (Output) -> T) -> Publishers.Map<Self, T> {
        Publishers.Map(upstream: self, transform: transform)
    }
}
