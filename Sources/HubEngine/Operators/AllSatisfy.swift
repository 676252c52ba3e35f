extension Publishers {
    /// Emits whether every upstream value satisfies a predicate, as Combine's `Publishers.AllSatisfy`.
    ///
    /// Demand as ``Publishers/Reduce``. The first value that fails the predicate decides
    /// the answer: the upstream is cancelled and `false` is sent (once requested).
    /// An empty upstream gives `true`.
    public struct AllSatisfy<Upstream: Publisher>: Publisher {
        public typealias Output = Bool
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are tested.
        public let upstream: Upstream
        /// The predicate every value must satisfy.
        public let predicate: (Upstream.Output) -> Bool

        /// Whether all of `upstream`'s values satisfy `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            upstream.receive(subscriber: ReducerSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, initial: true, mapFailure: { $0 }
            ) { result, input in
                guard predicate(input) else {
                    result = false
                    return .finish
                }
                return .proceed
            })
        }
    }
}

extension Publisher {
    /// Emits whether every value satisfies `predicate`, finishing early at the first that does not.
    public func allSatisfy(_ predicate: @escaping (Output) -> Bool) -> Publishers.AllSatisfy<Self> {
        Publishers.AllSatisfy(upstream: self, predicate: predicate)
    }
}
