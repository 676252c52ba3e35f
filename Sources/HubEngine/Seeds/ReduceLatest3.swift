extension Publishers {
    /// Combines three publishers of different types and emits as soon as any of them emits,
    /// passing `nil` for the ones that have not emitted yet, as the `ReduceLatest3` of
    /// *Designing and writing a custom, generic Combine Publisher in Swift* (Shareup).
    ///
    /// Unlike `CombineLatest3` it does not wait for every upstream: `(1, nil, nil)` is
    /// emitted as soon as `a` emits `1`.
    /// - Demand: as the article's subscription, which reads its upstreams with `sink`, every
    ///   upstream is asked for `.unlimited` and only its latest value is kept; the downstream's
    ///   demand decides when an output is emitted. Values arriving while the downstream has no
    ///   demand are coalesced: one output made of the latest values is emitted when demand
    ///   arrives (never the all-`nil` tuple, never an output already delivered).
    /// - Completion: finishes once all three have finished (a coalesced output still waiting for
    ///   demand is dropped); fails as soon as one fails, cancelling the other two.
    /// - Cancellation cancels all three upstreams; nothing is delivered afterwards.
    public struct ReduceLatest3<A: Publisher, B: Publisher, C: Publisher, Output>: Publisher
    where A.Failure == B.Failure, A.Failure == C.Failure {
        public typealias Failure = A.Failure

        /// The first upstream.
        public let a: A
        /// The second upstream.
        public let b: B
        /// The third upstream.
        public let c: C
        /// Builds an output from the latest values (`nil` for an upstream that has not emitted).
        public let transform: (A.Output?, B.Output?, C.Output?) -> Output

        /// Combines `a`, `b` and `c` with `transform`.
        public init(_ a: A, _ b: B, _ c: C, _ transform: @escaping (A.Output?, B.Output?, C.Output?) -> Output) {
            self.a = a
            self.b = b
            self.c = c
            self.transform = transform
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let latest = Latest()
            let transform = self.transform
            let combiner = LatestCombiner(downstream: subscriber, count: 3) {
                transform(latest.a, latest.b, latest.c)
            }
            subscriber.receive(subscription: combiner)
            combiner.attach(a, at: 0) { latest.a = $0 }
            combiner.attach(b, at: 1) { latest.b = $0 }
            combiner.attach(c, at: 2) { latest.c = $0 }
        }

        /// The latest value of each upstream.
        private final class Latest {
            var a: A.Output?
            var b: B.Output?
            var c: C.Output?
        }
    }
}

extension Publisher {
    /// Emits `transform(latestSelf, latestB, latestC)` whenever any of the three publishers emits,
    /// with `nil` for those that have not emitted yet. See ``Publishers/ReduceLatest3``.
    public func reduceLatest<B: Publisher, C: Publisher, Result>(
        _ b: B,
        _ c: C,
        _ transform: @escaping (Output?, B.Output?, C.Output?) -> Result
    ) -> Publishers.ReduceLatest3<Self, B, C, Result> where B.Failure == Failure, C.Failure == Failure {
        Publishers.ReduceLatest3(self, b, c, transform)
    }
}
