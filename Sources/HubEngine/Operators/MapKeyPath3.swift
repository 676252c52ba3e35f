extension Publishers {
    /// Publishes the values of three key paths of each upstream value, as a tuple, as Combine's
    /// `Publishers.MapKeyPath3`.
    ///
    /// Demand passes through unchanged (the upstream subscription is handed to the downstream).
    public struct MapKeyPath3<Upstream: Publisher, Output0, Output1, Output2>: Publisher {
        public typealias Output = (Output0, Output1, Output2)
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are read.
        public let upstream: Upstream
        /// The first key path read from each value.
        public let keyPath0: KeyPath<Upstream.Output, Output0>
        /// The second key path read from each value.
        public let keyPath1: KeyPath<Upstream.Output, Output1>
        /// The third key path read from each value.
        public let keyPath2: KeyPath<Upstream.Output, Output2>

        /// `keyPath0`, `keyPath1` and `keyPath2` read from each of `upstream`'s values.
        public init(
            upstream: Upstream, keyPath0: KeyPath<Upstream.Output, Output0>,
            keyPath1: KeyPath<Upstream.Output, Output1>, keyPath2: KeyPath<Upstream.Output, Output2>
        ) {
            self.upstream = upstream
            self.keyPath0 = keyPath0
            self.keyPath1 = keyPath1
            self.keyPath2 = keyPath2
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber, keyPath0: keyPath0, keyPath1: keyPath1, keyPath2: keyPath2))
        }

        private struct Inner<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            let downstream: Downstream
            let keyPath0: KeyPath<Upstream.Output, Output0>
            let keyPath1: KeyPath<Upstream.Output, Output1>
            let keyPath2: KeyPath<Upstream.Output, Output2>
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { downstream.receive(subscription: subscription) }
            func receive(_ input: Input) -> Subscribers.Demand {
                downstream.receive((input[keyPath: keyPath0], input[keyPath: keyPath1], input[keyPath: keyPath2]))
            }
            func receive(completion: Subscribers.Completion<Failure>) { downstream.receive(completion: completion) }
        }
    }
}

extension Publisher {
    /// Publishes the values of `keyPath0`, `keyPath1` and `keyPath2` of each value, as a tuple.
    public func map<T0, T1, T2>(
        _ keyPath0: KeyPath<Output, T0>, _ keyPath1: KeyPath<Output, T1>, _ keyPath2: KeyPath<Output, T2>
    ) -> Publishers.MapKeyPath3<Self, T0, T1, T2> {
        Publishers.MapKeyPath3(upstream: self, keyPath0: keyPath0, keyPath1: keyPath1, keyPath2: keyPath2)
    }
}
