extension Publishers {
    /// Makes a publisher that cannot fail connectable, as Combine's `Publishers.MakeConnectable`:
    /// a multicast through a ``PassthroughSubject``.
    public struct MakeConnectable<Upstream: Publisher>: ConnectablePublisher {
        /// The values published.
        public typealias Output = Upstream.Output
        /// The error published.
        public typealias Failure = Upstream.Failure

        private let inner: Multicast<Upstream, PassthroughSubject<Output, Failure>>

        /// A connectable version of `upstream`.
        public init(upstream: Upstream) {
            inner = upstream.multicast(subject: PassthroughSubject<Output, Failure>())
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            inner.receive(subscriber: subscriber)
        }

        /// Subscribes the shared subject to the upstream; cancel the result to disconnect.
        public func connect() -> any Cancellable {
            inner.connect()
        }
    }
}

extension Publisher where Failure == Never {
    /// A connectable version of this publisher: nothing flows until `connect()`.
    public func makeConnectable() -> Publishers.MakeConnectable<Self> {
        Publishers.MakeConnectable(upstream: self)
    }
}
