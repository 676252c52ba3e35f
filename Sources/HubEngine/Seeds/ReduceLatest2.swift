extension Publishers {
    /// Combines two publishers of different types and emits as soon as either emits, passing
    /// `nil` for the one that has not emitted yet: the two-publisher form of
    /// ``Publishers/ReduceLatest3``, with the same demand, coalescing, completion and
    /// cancellation rules.
    public struct ReduceLatest2<A: Publisher, B: Publisher, Output>: Publisher where A.Failure == B.Failure {
        public typealias Failure = A.Failure

        /// The first upstream.
        public let a: A
        /// The second upstream.
        public let b: B
        /// Builds an output from the latest values (`nil` for an upstream that has not emitted).
        public let transform: (A.Output?, B.Output?) -> Output

        /// Combines `a` and `b` with `transform`.
        public init(_ a: A, _ b: B, _ transform: @escaping (A.Output?, B.Output?) -> Output) {
            self.a = a
            self.b = b
            self.transform = transform
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let latest = Latest()
            let transform = self.transform
            let combiner = LatestCombiner(downstream: subscriber, count: 2) {
                transform(latest.a, latest.b)
            }
            subscriber.receive(subscription: combiner)
            combiner.attach(a, at: 0) { latest.a = $0 }
            combiner.attach(b, at: 1) { latest.b = $0 }
        }

        /// The latest value of each upstream.
        private final class Latest {
            var a: A.Output?
            var b: B.Output?
        }
    }
}

extension Publisher {
    /// Emits `transform(latestSelf, latestB)` whenever either publisher emits, with `nil` for
    /// the one that has not emitted yet. See ``Publishers/ReduceLatest2``.
    public func reduceLatest<B: Publisher, Result>(
        _ b: B,
        _ transform: @escaping (Output?, B.Output?) -> Result
    ) -> Publishers.ReduceLatest2<Self, B, Result> where B.Failure == Failure {
        Publishers.ReduceLatest2(self, b, transform)
    }
}
