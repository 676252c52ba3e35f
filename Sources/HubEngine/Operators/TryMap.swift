extension Publishers {
    /// Transforms each value with a throwing closure, as Combine's `Publishers.TryMap`.
    ///
    /// Demand passes through unchanged. When the closure throws, the upstream is
    /// cancelled and the downstream fails with the thrown error; nothing follows.
    public struct TryMap<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = any Error

        /// The publisher whose values are transformed.
        public let upstream: Upstream
        /// The transformation; an error it throws ends the stream.
        public let transform: (Upstream.Output) throws -> Output

        /// A try-map of `upstream` by `transform`.
        public init(upstream: Upstream, transform: @escaping (Upstream.Output) throws -> Output) {
            self.upstream = upstream
            self.transform = transform
        }

        /// Attaches `subscriber` through a subscription that stops on the first thrown error.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let transform = self.transform
            upstream.receive(subscriber: ValueFilterSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, mapFailure: { $0 }
            ) { input in
                do { return .emit(try transform(input)) } catch { return .fail(error) }
            })
        }
    }
}

extension Publisher {
    /// Transforms each value with `transform`; a thrown error cancels upstream and fails downstream.
    public func tryMap<T>(_ transform: @escaping (Output) throws -> T) -> Publishers.TryMap<Self, T> {
        Publishers.TryMap(upstream: self, transform: transform)
    }
}

extension Publishers.Map {
    /// Fuses a `tryMap` after this `map` into one ``Publishers/TryMap``, as Combine does.
    public func tryMap<T>(_ transform: @escaping (Output) throws -> T) -> Publishers.TryMap<Upstream, T> {
        let first = self.transform
        return Publishers.TryMap(upstream: upstream) { try transform(first($0)) }
    }
}

extension Publishers.TryMap {
    /// Fuses a `map` after this `tryMap` into one ``Publishers/TryMap``, as Combine does.
    public func map<T>(_ transform: @escaping (Output) -> T) -> Publishers.TryMap<Upstream, T> {
        let first = self.transform
        return Publishers.TryMap(upstream: upstream) { transform(try first($0)) }
    }

    /// Fuses a `tryMap` after this `tryMap` into one ``Publishers/TryMap``, as Combine does.
    public func tryMap<T>(_ transform: @escaping (Output) throws -> T) -> Publishers.TryMap<Upstream, T> {
        let first = self.transform
        return Publishers.TryMap(upstream: upstream) { try transform(try first($0)) }
    }
}
