extension Publishers {
    /// Emits whether the upstream produces a given value, as Combine's `Publishers.Contains`.
    ///
    /// Demand as ``Publishers/Reduce``. The first equal value decides the answer: the
    /// upstream is cancelled and `true` is sent (once requested). Otherwise `false` when
    /// the upstream finishes.
    public struct Contains<Upstream: Publisher>: Publisher where Upstream.Output: Equatable {
        public typealias Output = Bool
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are searched.
        public let upstream: Upstream
        /// The value searched for.
        public let output: Upstream.Output

        /// Whether `upstream` produces `output`.
        public init(upstream: Upstream, output: Upstream.Output) {
            self.upstream = upstream
            self.output = output
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let wanted = output
            upstream.receive(subscriber: ReducerSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, initial: false, mapFailure: { $0 }
            ) { result, input in
                guard input == wanted else { return .proceed }
                result = true
                return .finish
            })
        }
    }
}

extension Publisher where Output: Equatable {
    /// Emits whether the upstream produces `output`, finishing early when it does.
    public func contains(_ output: Output) -> Publishers.Contains<Self> {
        Publishers.Contains(upstream: self, output: output)
    }
}
