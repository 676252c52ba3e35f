import HubValue

extension Publishers {
    /// Republishes the values whose index lies in a range, as Combine's `Publishers.Output`
    /// (behind `output(at:)`, `output(in:)` and `prefix(_:)`).
    ///
    /// Demand passes through; each value before the range is replaced by a demand of
    /// one. As in Combine, the operator finishes (and cancels the upstream) when it
    /// receives the first value past the range, or when the upstream finishes.
    /// With a `state`, how far it has counted is checkpointed.
    public struct Output<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are selected.
        public let upstream: Upstream
        /// The indices of the values republished.
        public let range: CountableRange<Int>

        /// Where how far it has counted is checkpointed, if it is.
        public let state: OperatorStateSlot?

        /// The values of `upstream` whose index is in `range`, the count checkpointed in
        /// `state` if given. Both bounds must not be negative.
        public init(upstream: Upstream, range: CountableRange<Int>, state: OperatorStateSlot? = nil) {
            precondition(range.lowerBound >= 0, "lowerBound must not be negative")
            precondition(range.upperBound >= 0, "upperBound must not be negative")
            self.upstream = upstream
            self.range = range
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, range: range)
            if let slot = state {
                let state = OperatorState(slot: slot, codec: StateCodec<Void>.void)
                let range = self.range
                state.restore("output") { snapshot throws(CheckpointError) in
                    let seen = try snapshot.int("seen")
                    guard seen >= 0 else { throw CheckpointError(.malformed, "output restored a negative count") }
                    inner.skip(seen, of: range)
                }
                state.attach("output") { [weak inner] in inner.map { ["seen": .int(Int64($0.seen(of: range)))] } }
            }
            upstream.receive(subscriber: inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Upstream.Output, Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private var downstream: Downstream?
            private var upstream: (any Subscription)?
            private var subscribed = false
            private var remainingUntilStart: Int
            private var remainingCount: Int

            init(downstream: Downstream, range: CountableRange<Int>) {
                self.downstream = downstream
                self.remainingUntilStart = range.lowerBound
                self.remainingCount = range.count
            }

            /// How many upstream values it has counted (at most the range's end), for a checkpoint.
            fileprivate func seen(of range: CountableRange<Int>) -> Int {
                range.lowerBound - remainingUntilStart + range.count - remainingCount
            }

            /// Counts `seen` values as received already (restored from a checkpoint).
            fileprivate func skip(_ seen: Int, of range: CountableRange<Int>) {
                let seen = Swift.min(seen, range.upperBound)
                remainingUntilStart = Swift.max(0, range.lowerBound - seen)
                remainingCount = range.count - Swift.max(0, seen - range.lowerBound)
            }

            func receive(subscription: any Subscription) {
                guard !subscribed, let downstream else {
                    subscription.cancel()
                    return
                }
                subscribed = true
                upstream = subscription
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard let downstream else { return .none }
                if remainingUntilStart > 0 {
                    remainingUntilStart -= 1
                    return .max(1)
                }
                if remainingCount > 0 {
                    remainingCount -= 1
                    return downstream.receive(input)
                }
                self.downstream = nil
                upstream.take()?.cancel()
                downstream.receive(completion: .finished)
                return .none
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard let downstream = downstream.take() else { return }
                upstream = nil
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, downstream != nil, let upstream else { return }
                upstream.request(demand)
            }

            func cancel() {
                downstream = nil
                upstream.take()?.cancel()
            }
        }
    }
}

extension Publishers.Output: Equatable where Upstream: Equatable {
    /// Equal upstreams and parameters (and the same checkpoint slot, if any).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.upstream == rhs.upstream && lhs.range == rhs.range && lhs.state === rhs.state
    }
}

extension Publisher {
    /// Republishes at most the first `maxLength` values. Demand passes through.
    public func prefix(_ maxLength: Int) -> Publishers.Output<Self> {
        precondition(maxLength >= 0, "maxLength must not be negative")
        return output(in: ..<maxLength)
    }

    /// Republishes only the value at `index` (counting from zero).
    public func output(at index: Int) -> Publishers.Output<Self> {
        output(in: index...index)
    }

    /// Republishes only the values whose index is in `range`.
    public func output<R: RangeExpression>(in range: R) -> Publishers.Output<Self> where R.Bound == Int {
        Publishers.Output(upstream: self, range: range.relative(to: 0 ..< .max))
    }
}
