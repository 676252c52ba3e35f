extension Publishers {
    /// Ignores every upstream value and republishes only the completion, as Combine's
    /// `Publishers.IgnoreOutput`.
    ///
    /// Requests `.unlimited` from upstream as soon as it is subscribed (the downstream
    /// can never receive a value, so its demand does not matter). The upstream
    /// subscription is handed to the downstream, so cancelling reaches upstream directly.
    public struct IgnoreOutput<Upstream: Publisher>: Publisher {
        public typealias Output = Never
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are ignored.
        public let upstream: Upstream

        /// Ignores `upstream`'s values.
        public init(upstream: Upstream) { self.upstream = upstream }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber))
        }

        private struct Inner<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Never, Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            let downstream: Downstream
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) {
                downstream.receive(subscription: subscription)
                subscription.request(.unlimited)
            }
            func receive(_ input: Input) -> Subscribers.Demand { .none }
            func receive(completion: Subscribers.Completion<Failure>) { downstream.receive(completion: completion) }
        }
    }
}

extension Publisher {
    /// Ignores all values and passes on only the completion.
    public func ignoreOutput() -> Publishers.IgnoreOutput<Self> { Publishers.IgnoreOutput(upstream: self) }
}
