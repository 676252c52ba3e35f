extension Publishers {
    /// Republishes values while a predicate holds, then finishes,
    /// as Combine's `Publishers.PrefixWhile`.
    ///
    /// Demand passes through. The first value that fails the predicate is not
    /// published: the upstream is cancelled and the downstream finishes.
    public struct PrefixWhile<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose leading values are republished.
        public let upstream: Upstream
        /// Values are republished while this returns `true`.
        public let predicate: (Upstream.Output) -> Bool

        /// The leading values of `upstream` that satisfy `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            upstream.receive(subscriber: WhilePredicateSubscription<Output, Failure, S>(
                mode: .prefix, downstream: subscriber, predicate: { .success(predicate($0)) }, mapFailure: { $0 }))
        }
    }

    /// Republishes values while a throwing predicate holds, then finishes,
    /// as Combine's `Publishers.TryPrefixWhile`. An error thrown by the predicate
    /// cancels the upstream and fails the downstream with that error.
    public struct TryPrefixWhile<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher whose leading values are republished.
        public let upstream: Upstream
        /// Values are republished while this returns `true`; it may throw.
        public let predicate: (Upstream.Output) throws -> Bool

        /// The leading values of `upstream` that satisfy `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            upstream.receive(subscriber: WhilePredicateSubscription<Output, Upstream.Failure, S>(
                mode: .prefix, downstream: subscriber,
                predicate: { value in Result { try predicate(value) } },
                mapFailure: { $0 }))
        }
    }
}

extension Publisher {
    /// Republishes values while `predicate` returns `true`, then finishes.
    public func prefix(while predicate: @escaping (Output) -> Bool) -> Publishers.PrefixWhile<Self> {
        Publishers.PrefixWhile(upstream: self, predicate: predicate)
    }

    /// Republishes values while `predicate` returns `true`, then finishes; fails with the error it throws.
    public func tryPrefix(while predicate: @escaping (Output) throws -> Bool) -> Publishers.TryPrefixWhile<Self> {
        Publishers.TryPrefixWhile(upstream: self, predicate: predicate)
    }
}
