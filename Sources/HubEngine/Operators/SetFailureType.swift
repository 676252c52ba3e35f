extension Publishers {
    /// Gives a publisher that cannot fail a failure type, as Combine's `Publishers.SetFailureType`.
    ///
    /// Values, completion and demand pass through unchanged.
    public struct SetFailureType<Upstream: Publisher, Failure: Error>: Publisher where Upstream.Failure == Never {
        public typealias Output = Upstream.Output

        /// The publisher that cannot fail.
        public let upstream: Upstream

        /// `upstream`, typed as failing with `Failure`.
        public init(upstream: Upstream) { self.upstream = upstream }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber))
        }

        /// The same upstream with another failure type.
        public func setFailureType<E: Error>(to failureType: E.Type) -> Publishers.SetFailureType<Upstream, E> {
            Publishers.SetFailureType<Upstream, E>(upstream: upstream)
        }

        private struct Inner<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Upstream.Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Never

            let downstream: Downstream
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { downstream.receive(subscription: subscription) }
            func receive(_ input: Input) -> Subscribers.Demand { downstream.receive(input) }
            func receive(completion: Subscribers.Completion<Never>) { downstream.receive(completion: .finished) }
        }
    }
}

extension Publisher where Failure == Never {
    /// This publisher, typed as failing with `failureType` (it still never fails).
    public func setFailureType<E: Error>(to failureType: E.Type) -> Publishers.SetFailureType<Self, E> {
        Publishers.SetFailureType(upstream: self)
    }
}
