extension Publishers {
    /// Omits values while a predicate holds, then republishes everything,
    /// as Combine's `Publishers.DropWhile`.
    ///
    /// Demand passes through; each dropped value is replaced by a demand of one.
    public struct DropWhile<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose leading values are dropped.
        public let upstream: Upstream
        /// Values are dropped while this returns `true`.
        public let predicate: (Upstream.Output) -> Bool

        /// `upstream` without its leading values that satisfy `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            upstream.receive(subscriber: WhilePredicateSubscription<Output, Failure, S>(
                mode: .drop, downstream: subscriber, predicate: { .success(predicate($0)) }, mapFailure: { $0 }))
        }
    }

    /// Omits values while a throwing predicate holds, then republishes everything,
    /// as Combine's `Publishers.TryDropWhile`. An error thrown by the predicate cancels
    /// the upstream and fails the downstream with that error.
    public struct TryDropWhile<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher whose leading values are dropped.
        public let upstream: Upstream
        /// Values are dropped while this returns `true`; it may throw.
        public let predicate: (Upstream.Output) throws -> Bool

        /// `upstream` without its leading values that satisfy `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            upstream.receive(subscriber: WhilePredicateSubscription<Output, Upstream.Failure, S>(
                mode: .drop, downstream: subscriber,
                predicate: { value in Result { try predicate(value) } },
                mapFailure: { $0 }))
        }
    }
}

extension Publisher {
    /// Omits values while `predicate` returns `true`, then republishes all values.
    public func drop(while predicate: @escaping (Output) -> Bool) -> Publishers.DropWhile<Self> {
        Publishers.DropWhile(upstream: self, predicate: predicate)
    }

    /// Omits values while `predicate` returns `true`; fails with the error it throws.
    public func tryDrop(while predicate: @escaping (Output) throws -> Bool) -> Publishers.TryDropWhile<Self> {
        Publishers.TryDropWhile(upstream: self, predicate: predicate)
    }
}
