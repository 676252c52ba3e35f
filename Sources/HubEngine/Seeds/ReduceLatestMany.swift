import HubValue

extension Publishers {
    /// Combines any number of publishers of one type and emits, as soon as any of them emits,
    /// the array of their latest values with `nil` for those that have not emitted yet: the
    /// `ReduceLatest3` of *Designing and writing a custom, generic Combine Publisher in Swift*
    /// for any number of upstreams, with the same rules (see ``ReduceLatest3``):
    ///
    /// - every upstream is read with `.unlimited` demand and only its latest value is kept;
    ///   the downstream's demand decides when an array is emitted, and values arriving without
    ///   demand are coalesced into one array of the latest values (never the all-`nil` array,
    ///   never an array already delivered);
    /// - finishes once every upstream has finished; fails as soon as one fails, cancelling the
    ///   others; cancellation cancels every upstream.
    public struct ReduceLatestMany<Upstream: Publisher>: Publisher {
        public typealias Output = [Upstream.Output?]
        public typealias Failure = Upstream.Failure

        /// The publishers combined, in output order.
        public let publishers: [Upstream]
        /// Where the latest values are checkpointed, if they are.
        public let state: OperatorState<Upstream.Output>?

        /// Combines `publishers`, the latest values checkpointed in `state` if given.
        public init(_ publishers: [Upstream], state: OperatorState<Upstream.Output>? = nil) {
            self.publishers = publishers
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let latest = Latest(count: publishers.count)
            let combiner = LatestCombiner(downstream: subscriber, count: publishers.count) { latest.values }
            if let state {
                combiner.checkpoint(
                    state, kind: "reduceLatest", count: publishers.count, read: { [weak latest] in latest?.values },
                    write: { latest.values = $0 })
            }
            subscriber.receive(subscription: combiner)
            for (index, publisher) in publishers.enumerated() {
                guard combiner.isActive else { return }
                combiner.attach(publisher, at: index) { latest.values[index] = $0 }
            }
        }

        /// The latest value of each upstream.
        private final class Latest {
            var values: [Upstream.Output?]
            init(count: Int) { values = Array(repeating: nil, count: count) }
        }
    }

    /// Combines `publishers` into arrays of their latest values, `nil` for those that have not
    /// emitted yet. See ``ReduceLatestMany``.
    public static func reduceLatestMany<P: Publisher>(_ publishers: [P]) -> ReduceLatestMany<P> {
        ReduceLatestMany(publishers)
    }
}
