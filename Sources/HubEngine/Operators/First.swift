extension Publishers {
    /// Publishes the first value of the upstream, then finishes, as Combine's `Publishers.First`.
    ///
    /// Like Combine it requests `.unlimited` upstream, cancels the upstream on the
    /// first value, and delivers that value and `finished` once the downstream has
    /// requested anything.
    public struct First<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose first value is taken.
        public let upstream: Upstream

        /// The first value of `upstream`.
        public init(upstream: Upstream) { self.upstream = upstream }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: FirstLastProducer<Output, Failure, S>(
                downstream: subscriber, decide: { _ in .keepAndFinish }, mapFailure: { $0 }))
        }
    }

    /// Publishes the first value that satisfies a predicate, then finishes,
    /// as Combine's `Publishers.FirstWhere`. Requests `.unlimited` upstream.
    public struct FirstWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher searched.
        public let upstream: Upstream
        /// The condition the published value satisfies.
        public let predicate: (Upstream.Output) -> Bool

        /// The first value of `upstream` satisfying `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            upstream.receive(subscriber: FirstLastProducer<Output, Failure, S>(
                downstream: subscriber, decide: { predicate($0) ? .keepAndFinish : .skip }, mapFailure: { $0 }))
        }
    }

    /// Publishes the first value that satisfies a throwing predicate, then finishes,
    /// as Combine's `Publishers.TryFirstWhere`. An error thrown by the predicate
    /// cancels the upstream and fails the downstream with that error.
    public struct TryFirstWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher searched.
        public let upstream: Upstream
        /// The condition the published value satisfies; it may throw.
        public let predicate: (Upstream.Output) throws -> Bool

        /// The first value of `upstream` satisfying `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            upstream.receive(subscriber: FirstLastProducer<Output, Upstream.Failure, S>(
                downstream: subscriber,
                decide: { value in
                    do { return try predicate(value) ? .keepAndFinish : .skip } catch { return .fail(error) }
                },
                mapFailure: { $0 }))
        }
    }
}

extension Publishers.First: Equatable where Upstream: Equatable {}

extension Publisher {
    /// Publishes the first value, then finishes. Requests `.unlimited` upstream, as Combine does.
    public func first() -> Publishers.First<Self> {
        Publishers.First(upstream: self)
    }

    /// Publishes the first value satisfying `predicate`, then finishes.
    public func first(where predicate: @escaping (Output) -> Bool) -> Publishers.FirstWhere<Self> {
        Publishers.FirstWhere(upstream: self, predicate: predicate)
    }

    /// Publishes the first value satisfying `predicate`, then finishes; fails with the error it throws.
    public func tryFirst(where predicate: @escaping (Output) throws -> Bool) -> Publishers.TryFirstWhere<Self> {
        Publishers.TryFirstWhere(upstream: self, predicate: predicate)
    }
}
