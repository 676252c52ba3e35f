extension Publishers {
    /// A publisher that interleaves the values of any number of upstream publishers of one
    /// type, as Combine's `Publishers.MergeMany`.
    ///
    /// While the downstream's demand is finite, each upstream has at most one
    /// value outstanding: it is asked for `.max(1)` when it subscribes and for
    /// one more only after its value has been delivered. A value that arrives
    /// without downstream demand waits (one per upstream) and is delivered, in
    /// upstream order, when the downstream asks for more. When the downstream's
    /// demand becomes `.unlimited`, every upstream is asked for `.unlimited`.
    /// It finishes when all upstreams have finished and no value waits, and
    /// fails as soon as one upstream fails, cancelling the others.
    public struct MergeMany<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The merged publishers, in order.
        public let publishers: [Upstream]

        /// A merge of the given publishers.
        public init(_ upstream: Upstream...) {
            publishers = upstream
        }

        /// A merge of the publishers of a sequence.
        public init<Upstreams: Swift.Sequence>(_ upstream: Upstreams) where Upstreams.Element == Upstream {
            publishers = Array(upstream)
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            MergeInner.run(subscriber) { inner in
                for publisher in publishers { inner.attach(publisher) }
            }
        }

        /// This merge with one more publisher.
        public func merge(with other: Upstream) -> MergeMany {
            MergeMany(publishers + [other])
        }
    }
}
