extension Publishers {
    /// Emits whether every upstream value satisfies a throwing predicate, as Combine's
    /// `Publishers.TryAllSatisfy`.
    ///
    /// As ``Publishers/AllSatisfy``; when the predicate throws, the upstream is cancelled
    /// and the downstream fails at once with the thrown error.
    public struct TryAllSatisfy<Upstream: Publisher>: Publisher {
        public typealias Output = Bool
        public typealias Failure = any Error

        /// The publisher whose values are tested.
        public let upstream: Upstream
        /// The predicate every value must satisfy; an error it throws ends the stream.
        public let predicate: (Upstream.Output) throws -> Bool

        /// Whether all of `upstream`'s values satisfy `predicate`.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            upstream.receive(subscriber: ReducerSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, initial: true, mapFailure: { $0 }
            ) { result, input in
                do {
                    guard try predicate(input) else {
                        result = false
                        return .finish
                    }
                    return .proceed
                } catch {
                    return .fail(error)
                }
            })
        }
    }
}

extension Publisher {
    /// Emits whether every value satisfies a throwing `predicate`; a thrown error fails downstream.
    public func tryAllSatisfy(_ predicate: @escaping (Output) throws -> Bool) -> Publishers.TryAllSatisfy<Self> {
        Publishers.TryAllSatisfy(upstream: self, predicate: predicate)
    }
}
