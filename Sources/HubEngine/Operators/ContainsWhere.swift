extension Publishers {
    /// Emits whether the upstream produces a value satisfying a predicate, as Combine's
    /// `Publishers.ContainsWhere`.
    ///
    /// Demand as ``Publishers/Reduce``. The first matching value decides the answer: the
    /// upstream is cancelled and `true` is sent (once requested).
    public struct ContainsWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Bool
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are searched.
        public let upstream: Upstream
        /// The predicate a value must satisfy.
        public let predicate: (Upstream.Output) -> Bool

        /// Whether `upstream` produces a value satisfying `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            upstream.receive(subscriber: ReducerSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, initial: false, mapFailure: { $0 }
            ) { result, input in
                guard predicate(input) else { return .proceed }
                result = true
                return .finish
            })
        }
    }
}

extension Publisher {
    /// Emits whether the upstream produces a value satisfying `predicate`, finishing early when it does.
    public func contains(where predicate: @escaping (Output) -> Bool) -> Publishers.ContainsWhere<Self> {
        Publishers.ContainsWhere(upstream: self, predicate: predicate)
    }
}
