import HubValue

extension Publishers {
    /// Omits the first `count` values of the upstream, as Combine's `Publishers.Drop`.
    ///
    /// The downstream receives its subscription before the upstream is subscribed.
    /// When the upstream subscription arrives, the operator requests the demand the
    /// downstream has asked for so far plus `count` (once); afterwards demand passes
    /// straight through. With a `state`, the count still to drop is checkpointed.
    public struct Drop<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose first values are dropped.
        public let upstream: Upstream
        /// How many values are dropped.
        public let count: Int

        /// Where the count still to drop is checkpointed, if it is.
        public let state: OperatorStateSlot?

        /// `upstream` without its first `count` values, the count left checkpointed in
        /// `state` if given. `count` must not be negative.
        public init(upstream: Upstream, count: Int, state: OperatorStateSlot? = nil) {
            precondition(count >= 0, "count must not be negative")
            self.upstream = upstream
            self.count = count
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, count: count)
            if let slot = state {
                let state = OperatorState(slot: slot, codec: StateCodec<Void>.void)
                let count = self.count
                state.restore("drop") { snapshot throws(CheckpointError) in
                    let remaining = try snapshot.int("remaining")
                    guard (0...count).contains(remaining) else {
                        throw CheckpointError(.malformed, "dropFirst(\(count)) restored \(remaining) values left to drop")
                    }
                    inner.remaining = remaining
                }
                state.attach("drop") { [weak inner] in inner.map { ["remaining": .int(Int64($0.remaining))] } }
            }
            subscriber.receive(subscription: inner)
            upstream.receive(subscriber: inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private var downstream: Downstream?
            private var upstream: (any Subscription)?
            private var subscribed = false
            private var pending = Subscribers.Demand.none
            fileprivate var remaining: Int

            init(downstream: Downstream, count: Int) {
                self.downstream = downstream
                self.remaining = count
            }

            func receive(subscription: any Subscription) {
                guard !subscribed, downstream != nil else {
                    subscription.cancel()
                    return
                }
                subscribed = true
                upstream = subscription
                let initial = pending + remaining
                pending = .none
                if initial > 0 { subscription.request(initial) }
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard let downstream else { return .none }
                if remaining > 0 {
                    remaining -= 1
                    return .none
                }
                return downstream.receive(input)
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard let downstream = downstream.take() else { return }
                upstream = nil
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, downstream != nil else { return }
                if let upstream {
                    upstream.request(demand)
                } else {
                    pending += demand
                }
            }

            func cancel() {
                downstream = nil
                upstream.take()?.cancel()
            }
        }
    }
}

extension Publishers.Drop: Equatable where Upstream: Equatable {
    /// Equal upstreams and parameters (and the same checkpoint slot, if any).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.upstream == rhs.upstream && lhs.count == rhs.count && lhs.state === rhs.state
    }
}

extension Publisher {
    /// Omits the first `count` values. Requests `count` extra values upstream once.
    public func dropFirst(_ count: Int = 1) -> Publishers.Drop<Self> {
        Publishers.Drop(upstream: self, count: count)
    }
}
