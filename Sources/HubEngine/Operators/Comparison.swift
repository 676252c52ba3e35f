extension Publishers {
    /// Emits the greatest value by an ordering, when the upstream finishes, as Combine's
    /// `Publishers.Comparison` (behind `min` and `max`).
    ///
    /// A value replaces the current one when `areInIncreasingOrder(current, value)` is true,
    /// so among equal values the first is kept. Nothing is emitted for an empty upstream.
    /// Demand as ``Publishers/Reduce``.
    public struct Comparison<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are compared.
        public let upstream: Upstream
        /// The strict ordering: true when the first argument comes before the second.
        public let areInIncreasingOrder: (Upstream.Output, Upstream.Output) -> Bool

        /// The greatest of `upstream`'s values by `areInIncreasingOrder`.
        public init(upstream: Upstream, areInIncreasingOrder: @escaping (Upstream.Output, Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.areInIncreasingOrder = areInIncreasingOrder
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let ordered = areInIncreasingOrder
            upstream.receive(subscriber: ReducerSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, initial: nil, mapFailure: { $0 }
            ) { result, input in
                if let current = result {
                    if ordered(current, input) { result = input }
                } else {
                    result = input
                }
                return .proceed
            })
        }
    }
}

extension Publisher where Output: Comparable {
    /// Emits the smallest value once the upstream finishes.
    public func min() -> Publishers.Comparison<Self> { max(by: >) }

    /// Emits the largest value once the upstream finishes.
    public func max() -> Publishers.Comparison<Self> { max(by: <) }
}

extension Publisher {
    /// Emits the smallest value by `areInIncreasingOrder` once the upstream finishes.
    public func min(by areInIncreasingOrder: @escaping (Output, Output) -> Bool) -> Publishers.Comparison<Self> {
        max(by: { areInIncreasingOrder($1, $0) })
    }

    /// Emits the largest value by `areInIncreasingOrder` once the upstream finishes.
    public func max(by areInIncreasingOrder: @escaping (Output, Output) -> Bool) -> Publishers.Comparison<Self> {
        Publishers.Comparison(upstream: self, areInIncreasingOrder: areInIncreasingOrder)
    }
}
