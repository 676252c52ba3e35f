extension Publishers {
    /// Republishes only the values that satisfy a predicate, as Combine's `Publishers.Filter`.
    ///
    /// A value that is filtered out is replaced by a demand of one from upstream,
    /// so a downstream demand of n never becomes more than n values outstanding.
    public struct Filter<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are filtered.
        public let upstream: Upstream
        /// The predicate a value must satisfy to pass.
        public let isIncluded: (Upstream.Output) -> Bool

        /// A filter of `upstream` by `isIncluded`.
        public init(upstream: Upstream, isIncluded: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.isIncluded = isIncluded
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber, isIncluded: isIncluded))
        }

        @usableFromInline
        internal struct Inner<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Failure {
            @usableFromInline typealias Input = Upstream.Output
            @usableFromInline typealias Failure = Upstream.Failure

            @usableFromInline let downstream: Downstream
            @usableFromInline let isIncluded: (Upstream.Output) -> Bool

            @inlinable init(downstream: Downstream, isIncluded: @escaping (Upstream.Output) -> Bool) {
                self.downstream = downstream
                self.isIncluded = isIncluded
                self.combineIdentifier = CombineIdentifier()
            }
            @usableFromInline let combineIdentifier: CombineIdentifier


            @inlinable func receive(subscription: any Subscription) { downstream.receive(subscription: subscription) }
            @inlinable func receive(_ input: Input) -> Subscribers.Demand {
                isIncluded(input) ? downstream.receive(input) : .max(1)
            }
            @inlinable func receive(completion: Subscribers.Completion<Failure>) { downstream.receive(completion: completion) }
        }
    }
}

extension Publisher {
    /// Republishes only the values for which `isIncluded` is true.
    @inlinable
    public func filter(_ isIncluded: @escaping (Output) -> Bool) -> Publishers.Filter<Self> {
        Publishers.Filter(upstream: self, isIncluded: isIncluded)
    }
}
