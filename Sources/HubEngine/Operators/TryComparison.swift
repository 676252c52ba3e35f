extension Publishers {
    /// Emits the greatest value by a throwing ordering, when the upstream finishes, as Combine's
    /// `Publishers.TryComparison` (behind `tryMin` and `tryMax`).
    ///
    /// As ``Publishers/Comparison``; when the ordering throws, the upstream is cancelled and
    /// the downstream fails at once with the thrown error.
    public struct TryComparison<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher whose values are compared.
        public let upstream: Upstream
        /// The strict ordering; an error it throws ends the stream.
        public let areInIncreasingOrder: (Upstream.Output, Upstream.Output) throws -> Bool

        /// Where the greatest value so far is checkpointed, if it is.
        public let state: OperatorState<Upstream.Output>?

        /// The greatest of `upstream`'s values by `areInIncreasingOrder`, checkpointed in `state` if given.
        public init(
            upstream: Upstream, areInIncreasingOrder: @escaping (Upstream.Output, Upstream.Output) throws -> Bool,
            state: OperatorState<Upstream.Output>? = nil
        ) {
            self.upstream = upstream
            self.areInIncreasingOrder = areInIncreasingOrder
            self.state = state
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let ordered = areInIncreasingOrder
            upstream.receive(subscriber: ReducerSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, initial: nil, mapFailure: { $0 }, state: state, kind: "comparison"
            ) { result, input in
                guard let current = result else {
                    result = input
                    return .proceed
                }
                do {
                    if try ordered(current, input) { result = input }
                    return .proceed
                } catch {
                    return .fail(error)
                }
            })
        }
    }
}

extension Publisher {
    /// Emits the smallest value by a throwing `areInIncreasingOrder` once the upstream finishes.
    public func tryMin(by areInIncreasingOrder: @escaping (Output, Output) throws -> Bool) -> Publishers.TryComparison<Self> {
        tryMax(by: { try areInIncreasingOrder($1, $0) })
    }

    /// Emits the largest value by a throwing `areInIncreasingOrder` once the upstream finishes.
    public func tryMax(by areInIncreasingOrder: @escaping (Output, Output) throws -> Bool) -> Publishers.TryComparison<Self> {
        Publishers.TryComparison(upstream: self, areInIncreasingOrder: areInIncreasingOrder)
    }
}
