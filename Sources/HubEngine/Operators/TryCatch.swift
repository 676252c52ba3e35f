extension Publishers {
    /// Replaces a failed upstream with the publisher a throwing handler returns, as Combine's
    /// `Publishers.TryCatch`; an error the handler throws is delivered as the failure.
    ///
    /// Demand is handled as in ``Catch``: the outstanding downstream demand
    /// carries over to the replacement publisher.
    public struct TryCatch<Upstream: Publisher, NewPublisher: Publisher>: Publisher
    where Upstream.Output == NewPublisher.Output {
        /// The values published.
        public typealias Output = Upstream.Output
        /// The error published.
        public typealias Failure = any Error

        /// The publisher whose failure is caught.
        public let upstream: Upstream
        /// Makes the replacement publisher from the upstream's error, or throws.
        public let handler: (Upstream.Failure) throws -> NewPublisher

        /// Catches `upstream`'s failure with `handler`.
        public init(upstream: Upstream, handler: @escaping (Upstream.Failure) throws -> NewPublisher) {
            self.upstream = upstream
            self.handler = handler
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let handler = self.handler
            let inner = CatchInner<Upstream, NewPublisher, S>(downstream: subscriber, convert: { $0 }) { error in
                do { return .success(try handler(error)) } catch { return .failure(error) }
            }
            upstream.receive(subscriber: CatchInner<Upstream, NewPublisher, S>.Uncaught(inner: inner))
        }
    }
}

extension Publisher {
    /// On failure, continues with the publisher `handler` makes from the error; if `handler`
    /// throws, fails with the thrown error.
    public func tryCatch<P: Publisher>(_ handler: @escaping (Failure) throws -> P) -> Publishers.TryCatch<Self, P>
    where P.Output == Output {
        Publishers.TryCatch(upstream: self, handler: handler)
    }
}
