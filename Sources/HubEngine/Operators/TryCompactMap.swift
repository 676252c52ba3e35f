extension Publishers {
    /// Republishes the non-`nil` results of a throwing transformation, as Combine's
    /// `Publishers.TryCompactMap`.
    ///
    /// A `nil` result gives back a demand of one. When the transformation throws, the
    /// upstream is cancelled and the downstream fails with the thrown error.
    public struct TryCompactMap<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = any Error

        /// The publisher whose values are transformed.
        public let upstream: Upstream
        /// The transformation; `nil` drops the value, an error ends the stream.
        public let transform: (Upstream.Output) throws -> Output?

        /// A try-compact-map of `upstream` by `transform`.
        public init(upstream: Upstream, transform: @escaping (Upstream.Output) throws -> Output?) {
            self.upstream = upstream
            self.transform = transform
        }

        /// Attaches `subscriber` through a subscription that stops on the first thrown error.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let transform = self.transform
            upstream.receive(subscriber: ValueFilterSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, mapFailure: { $0 }
            ) { input in
                do { return try transform(input).map { .emit($0) } ?? .skip } catch { return .fail(error) }
            })
        }
    }
}

extension Publisher {
    /// Republishes the non-`nil` results of `transform`; a thrown error fails downstream.
    public func tryCompactMap<T>(_ transform: @escaping (Output) throws -> T?) -> Publishers.TryCompactMap<Self, T> {
        Publishers.TryCompactMap(upstream: self, transform: transform)
    }
}

extension Publishers.TryCompactMap {
    /// Fuses a `compactMap` after this `tryCompactMap` into one ``Publishers/TryCompactMap``, as Combine does.
    public func compactMap<T>(_ transform: @escaping (Output) throws -> T?) -> Publishers.TryCompactMap<Upstream, T> {
        let first = self.transform
        return Publishers.TryCompactMap(upstream: upstream) { try first($0).flatMap(transform) }
    }
}
