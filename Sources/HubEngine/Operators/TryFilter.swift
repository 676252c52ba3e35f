extension Publishers {
    /// Republishes the values that satisfy a throwing predicate, as Combine's `Publishers.TryFilter`.
    ///
    /// A value filtered out gives back a demand of one. When the predicate throws, the
    /// upstream is cancelled and the downstream fails with the thrown error.
    public struct TryFilter<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher whose values are filtered.
        public let upstream: Upstream
        /// The predicate a value must satisfy to pass; an error it throws ends the stream.
        public let isIncluded: (Upstream.Output) throws -> Bool

        /// A try-filter of `upstream` by `isIncluded`.
        public init(upstream: Upstream, isIncluded: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.isIncluded = isIncluded
        }

        /// Attaches `subscriber` through a subscription that stops on the first thrown error.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let isIncluded = self.isIncluded
            upstream.receive(subscriber: ValueFilterSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, mapFailure: { $0 }
            ) { input in
                do { return try isIncluded(input) ? .emit(input) : .skip } catch { return .fail(error) }
            })
        }
    }
}

extension Publisher {
    /// Republishes the values for which `isIncluded` returns true; a thrown error fails downstream.
    public func tryFilter(_ isIncluded: @escaping (Output) throws -> Bool) -> Publishers.TryFilter<Self> {
        Publishers.TryFilter(upstream: self, isIncluded: isIncluded)
    }
}

extension Publishers.Filter {
    /// Fuses a `tryFilter` after this `filter` into one ``Publishers/TryFilter``, as Combine does.
    public func tryFilter(_ isIncluded: @escaping (Output) throws -> Bool) -> Publishers.TryFilter<Upstream> {
        let first = self.isIncluded
        return Publishers.TryFilter(upstream: upstream) { try first($0) && isIncluded($0) }
    }
}

extension Publishers.TryFilter {
    /// Fuses a `filter` after this `tryFilter` into one ``Publishers/TryFilter``, as Combine does.
    public func filter(_ isIncluded: @escaping (Output) -> Bool) -> Publishers.TryFilter<Upstream> {
        let first = self.isIncluded
        return Publishers.TryFilter(upstream: upstream) { try first($0) && isIncluded($0) }
    }

    /// Fuses a `tryFilter` after this `tryFilter` into one ``Publishers/TryFilter``, as Combine does.
    public func tryFilter(_ isIncluded: @escaping (Output) throws -> Bool) -> Publishers.TryFilter<Upstream> {
        let first = self.isIncluded
        return Publishers.TryFilter(upstream: upstream) { try first($0) && isIncluded($0) }
    }
}
