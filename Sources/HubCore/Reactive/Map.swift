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

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, transform: transform))
        }

        private struct Inner<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            let downstream: Downstream
            let transform: (Upstream.Output) -> Output
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { downstream.receive(subscription: subscription) }
            func receive(_ input: Input) -> Subscribers.Demand { downstream.receive(transform(input)) }
            func receive(completion: Subscribers.Completion<Failure>) { downstream.receive(completion: completion) }
        }
    }
}

extension Publisher {
    /// Transforms each value with `transform`.
    public func map<T>(_ transform: @escaping (Output) -> T) -> Publishers.Map<Self, T> {
        Publishers.Map(upstream: self, transform: transform)
    }
}
