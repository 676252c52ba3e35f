extension Publishers {
    /// Publishes the values of two key paths of each upstream value, as a tuple, as Combine's
    /// `Publishers.MapKeyPath2`.
    ///
    /// Demand passes through unchanged (the upstream subscription is handed to the downstream).
    public struct MapKeyPath2<Upstream: Publisher, Output0, Output1>: Publisher {
        public typealias Output = (Output0, Output1)
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are read.
        public let upstream: Upstream
        /// The first key path read from each value.
        public let keyPath0: KeyPath<Upstream.Output, Output0>
        /// The second key path read from each value.
        public let keyPath1: KeyPath<Upstream.Output, Output1>

        /// `keyPath0` and `keyPath1` read from each of `upstream`'s values.
        public init(upstream: Upstream, keyPath0: KeyPath<Upstream.Output, Output0>, keyPath1: KeyPath<Upstream.Output, Output1>) {
            self.upstream = upstream
            self.keyPath0 = keyPath0
            self.keyPath1 = keyPath1
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber, keyPath0: keyPath0, keyPath1: keyPath1))
        }

        private struct Inner<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            let downstream: Downstream
            let keyPath0: KeyPath<Upstream.Output, Output0>
            let keyPath1: KeyPath<Upstream.Output, Output1>
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { downstream.receive(subscription: subscription) }
            func receive(_ input: Input) -> Subscribers.Demand {
                downstream.receive((input[keyPath: keyPath0], input[keyPath: keyPath1]))
            }
            func receive(completion: Subscribers.Completion<Failure>) { downstream.receive(completion: completion) }
        }
    }
}

extension Publisher {
    /// Publishes the values of `keyPath0` and `keyPath1` of each value, as a tuple.
    public func map<T0, T1>(
        _ keyPath0: KeyPath<Output, T0>, _ keyPath1: KeyPath<Output, T1>
    ) -> Publishers.MapKeyPath2<Self, T0, T1> {
        Publishers.MapKeyPath2(upstream: self, keyPath0: keyPath0, keyPath1: keyPath1)
    }
}
