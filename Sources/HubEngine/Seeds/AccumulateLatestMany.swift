import HubValue

extension Publishers {
    /// Combines any number of publishers of one type into an array of their latest values, in
    /// the order of the publishers, as the `AccumulateLatestMany` of *Declarative Reactive
    /// Programming with Combine* (there built by bisection over `CombineLatest`; here one
    /// subscription over all upstreams):
    ///
    /// - 0 publishers: emits `[]` on the first demand, then finishes (the article's `Just([])`).
    /// - 1 publisher: emits `[value]` for each value (the article's `map { [$0] }`).
    /// - 2 or more: as `CombineLatest`, nothing is emitted until every publisher has emitted at
    ///   least once; then each new value emits the array of the latest values.
    /// - Demand: every upstream is read with `.unlimited` demand and only its latest value is
    ///   kept (`CombineLatest`'s "buffer size of 1 for each upstream, holding the most recent
    ///   value", without the stale values an upstream that buffers for its subscriber would
    ///   otherwise hand over); values arriving without downstream demand are coalesced into
    ///   one array of the latest values, emitted when demand arrives. Unlike `CombineLatest`,
    ///   a cold upstream is therefore read to its end at once (`sequence([1, 2, 3])` counts
    ///   as its latest value, `3`).
    /// - Completion: finishes once every publisher has finished (a coalesced array still
    ///   waiting for demand is dropped); fails as soon as one fails, cancelling the others.
    /// - Cancellation cancels every upstream; nothing is delivered afterwards.
    public struct AccumulateLatestMany<Upstream: Publisher>: Publisher {
        public typealias Output = [Upstream.Output]
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

        /// Combines `publishers`.
        public init(_ publishers: Upstream...) {
            self.publishers = publishers
            state = nil
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let latest = Latest(count: publishers.count)
            let combiner = LatestCombiner(downstream: subscriber, count: publishers.count) {
                latest.output
            }
            if let state {
                combiner.checkpoint(
                    state, kind: "accumulateLatest", count: publishers.count, read: { [weak latest] in latest?.values },
                    write: { latest.restore($0) })
            }
            subscriber.receive(subscription: combiner)
            for (index, publisher) in publishers.enumerated() {
                guard combiner.isActive else { return }
                combiner.attach(publisher, at: index) { latest.store($0, at: index) }
            }
        }

        /// The latest value of each upstream.
        private final class Latest {
            private(set) var values: [Upstream.Output?]
            private var missing: Int

            func restore(_ restored: [Upstream.Output?]) {
                values = restored
                missing = restored.count(where: { $0 == nil })
            }

            init(count: Int) {
                values = Array(repeating: nil, count: count)
                missing = count
            }

            func store(_ value: Upstream.Output, at index: Int) {
                if values[index] == nil { missing -= 1 }
                values[index] = value
            }

            /// The array of latest values, or `nil` while one publisher has not emitted.
            var output: [Upstream.Output]? {
                guard missing == 0 else { return nil }
                return values.map { $0! }
            }
        }
    }

    /// Combines `publishers` into an array of their latest values. See ``AccumulateLatestMany``.
    public static func accumulateLatestMany<P: Publisher>(_ publishers: [P]) -> AccumulateLatestMany<P> {
        AccumulateLatestMany(publishers)
    }

    /// Combines `publishers` into an array of their latest values. See ``AccumulateLatestMany``.
    public static func accumulateLatestMany<P: Publisher>(_ publishers: P...) -> AccumulateLatestMany<P> {
        AccumulateLatestMany(publishers)
    }
}
