extension Publishers {
    /// Publishes the last value of the upstream, then finishes, as Combine's `Publishers.Last`.
    ///
    /// Like Combine it requests `.unlimited` upstream, remembers the latest value,
    /// and when the upstream finishes delivers it and `finished` once the downstream
    /// has requested anything.
    public struct Last<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose last value is taken.
        public let upstream: Upstream

        /// The last value of `upstream`.
        public init(upstream: Upstream) { self.upstream = upstream }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: FirstLastProducer<Output, Failure, S>(
                downstream: subscriber, decide: { _ in .keep }, mapFailure: { $0 }))
        }
    }

    /// Publishes the last value that satisfies a predicate once the upstream finishes,
    /// as Combine's `Publishers.LastWhere`. Requests `.unlimited` upstream.
    public struct LastWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher searched.
        public let upstream: Upstream
        /// The condition the published value satisfies.
        public let predicate: (Upstream.Output) -> Bool

        /// The last value of `upstream` satisfying `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            upstream.receive(subscriber: FirstLastProducer<Output, Failure, S>(
                downstream: subscriber, decide: { predicate($0) ? .keep : .skip }, mapFailure: { $0 }))
        }
    }

    /// Publishes the last value that satisfies a throwing predicate once the upstream finishes,
    /// as Combine's `Publishers.TryLastWhere`. An error thrown by the predicate
    /// cancels the upstream and fails the downstream with that error.
    public struct TryLastWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher searched.
        public let upstream: Upstream
        /// The condition the published value satisfies; it may throw.
        public let predicate: (Upstream.Output) throws -> Bool

        /// The last value of `upstream` satisfying `predicate`.
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
                    do { return try predicate(value) ? .keep : .skip } catch { return .fail(error) }
                },
                mapFailure: { $0 }))
        }
    }
}

extension Publishers.Last: Equatable where Upstream: Equatable {}

extension Publisher {
    /// Publishes the last value once the upstream finishes. Requests `.unlimited` upstream, as Combine does.
    public func last() -> Publishers.Last<Self> {
        Publishers.Last(upstream: self)
    }

    /// Publishes the last value satisfying `predicate`, then finishes.
    public func last(where predicate: @escaping (Output) -> Bool) -> Publishers.LastWhere<Self> {
        Publishers.LastWhere(upstream: self, predicate: predicate)
    }

    /// Publishes the last value satisfying `predicate`, then finishes; fails with the error it throws.
    public func tryLast(where predicate: @escaping (Output) throws -> Bool) -> Publishers.TryLastWhere<Self> {
        Publishers.TryLastWhere(upstream: self, predicate: predicate)
    }
}
