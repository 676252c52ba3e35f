extension Publishers {
    /// Replaces a failed upstream with the publisher a handler returns, as Combine's `Publishers.Catch`.
    ///
    /// Demand passes through to the upstream; the downstream demand still
    /// outstanding when the upstream fails is requested from the new publisher
    /// at once, so no demand is lost or added by the switch.
    public struct Catch<Upstream: Publisher, NewPublisher: Publisher>: Publisher
    where Upstream.Output == NewPublisher.Output {
        /// The values published.
        public typealias Output = Upstream.Output
        /// The error published.
        public typealias Failure = NewPublisher.Failure

        /// The publisher whose failure is caught.
        public let upstream: Upstream
        /// Makes the replacement publisher from the upstream's error.
        public let handler: (Upstream.Failure) -> NewPublisher

        /// Catches `upstream`'s failure with `handler`.
        public init(upstream: Upstream, handler: @escaping (Upstream.Failure) -> NewPublisher) {
            self.upstream = upstream
            self.handler = handler
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = CatchInner<Upstream, NewPublisher, S>(downstream: subscriber) { error in .success(handler(error)) }
            upstream.receive(subscriber: CatchInner<Upstream, NewPublisher, S>.Uncaught(inner: inner))
        }
    }
}

extension Publisher {
    /// On failure, continues with the publisher `handler` makes from the error.
    public func `catch`<P: Publisher>(_ handler: @escaping (Failure) -> P) -> Publishers.Catch<Self, P>
    where P.Output == Output {
        Publishers.Catch(upstream: self, handler: handler)
    }
}
