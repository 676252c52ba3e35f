extension Publishers {
    /// Shares one subscription to the upstream among all subscribers, as Combine's
    /// `Publishers.Share`: a multicast through a ``PassthroughSubject``, autoconnected.
    ///
    /// It is a class: every subscriber of the same `Share` shares the same
    /// upstream subscription. The first subscriber connects it, and the upstream
    /// is asked for `.unlimited` (the subject's demand), as in Combine; each
    /// subscriber receives only what its own demand allows. It disconnects when
    /// the last subscriber cancels.
    public final class Share<Upstream: Publisher>: Publisher, Equatable {
        /// The values published.
        public typealias Output = Upstream.Output
        /// The error published.
        public typealias Failure = Upstream.Failure

        /// The publisher shared.
        public let upstream: Upstream
        private let inner: Autoconnect<Multicast<Upstream, PassthroughSubject<Output, Failure>>>

        /// A shared subscription to `upstream`.
        public init(upstream: Upstream) {
            self.upstream = upstream
            inner = upstream.multicast(subject: PassthroughSubject<Output, Failure>()).autoconnect()
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            inner.receive(subscriber: subscriber)
        }

        /// Identity: two shares are equal only if they are the same object.
        public static func == (lhs: Share, rhs: Share) -> Bool { lhs === rhs }
    }
}

extension Publisher {
    /// Shares one subscription to this publisher among all subscribers of the result.
    public func share() -> Publishers.Share<Self> {
        Publishers.Share(upstream: self)
    }
}
