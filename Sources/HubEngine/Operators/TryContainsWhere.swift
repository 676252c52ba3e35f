extension Publishers {
    /// Emits whether the upstream produces a value satisfying a throwing predicate, as Combine's
    /// `Publishers.TryContainsWhere`.
    ///
    /// As ``Publishers/ContainsWhere``; when the predicate throws, the upstream is cancelled
    /// and the downstream fails at once with the thrown error.
    public struct TryContainsWhere<Upstream: Publisher>: Publisher {
        public typealias Output = Bool
        public typealias Failure = any Error

        /// The publisher whose values are searched.
        public let upstream: Upstream
        /// The predicate a value must satisfy; an error it throws ends the stream.
        public let predicate: (Upstream.Output) throws -> Bool

        /// Whether `upstream` produces a value satisfying `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            upstream.receive(subscriber: ReducerSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, initial: false, mapFailure: { $0 }
            ) { result, input in
                do {
                    guard try predicate(input) else { return .proceed }
                    result = true
                    return .finish
                } catch {
                    return .fail(error)
                }
            })
        }
    }
}

extension Publisher {
    /// Emits whether the upstream produces a value satisfying a throwing `predicate`;
    /// a thrown error fails downstream.
    public func tryContains(where predicate: @escaping (Output) throws -> Bool) -> Publishers.TryContainsWhere<Self> {
        Publishers.TryContainsWhere(upstream: self, predicate: predicate)
    }
}
