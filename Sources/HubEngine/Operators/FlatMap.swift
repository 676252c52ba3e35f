import DequeModule
import HubValue

extension Publishers {
    /// Maps each upstream value to a publisher and merges the values of those publishers,
    /// as Combine's `Publishers.FlatMap`.
    ///
    /// Demand, as in Combine: the upstream is asked for `maxPublishers` values at
    /// subscription and for one more each time an inner publisher finishes
    /// (unless `maxPublishers` is `.unlimited`). Each inner publisher is asked
    /// for one value at a time — or for `.unlimited` once the downstream demand is
    /// unlimited — and values that arrive while the downstream has no demand are
    /// buffered per inner and delivered when demand comes. It finishes when the
    /// upstream and every inner publisher have finished and the buffer is empty;
    /// the first failure (upstream or inner) cancels everything else and is
    /// delivered at once.
    ///
    /// With a `state`, its inner publishers are checkpointed: each is built in a scope of
    /// its own (``OperatorStateSlot/withScope(_:_:)``, so that the operators inside it are
    /// checkpointed with it), and the snapshot holds the upstream value that built each
    /// live one and the values buffered for the downstream. A subscription restores them:
    /// it builds each inner publisher again from its value (its operators restore their
    /// states), subscribes it, and asks the upstream only for the publishers left to
    /// `maxPublishers`.
    public struct FlatMap<NewPublisher: Publisher, Upstream: Publisher>: Publisher
    where NewPublisher.Failure == Upstream.Failure {
        /// The values published.
        public typealias Output = NewPublisher.Output
        /// The error published.
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are mapped to publishers.
        public let upstream: Upstream
        /// How many inner publishers may be active at once.
        public let maxPublishers: Subscribers.Demand
        /// Maps an upstream value to an inner publisher.
        public let transform: (Upstream.Output) -> NewPublisher

        /// Where the inner publishers are checkpointed (with the codec of the upstream's values), if they are.
        public let state: OperatorState<Upstream.Output>?
        /// The codec of the values buffered for the downstream, when checkpointed.
        public let outputCodec: StateCodec<Output>?

        /// A flat map of `upstream` by `transform` with at most `maxPublishers` inner
        /// publishers, checkpointed in `state` (its buffered values with `outputCodec`) if given.
        public init(
            upstream: Upstream, maxPublishers: Subscribers.Demand, transform: @escaping (Upstream.Output) -> NewPublisher,
            state: OperatorState<Upstream.Output>? = nil, outputCodec: StateCodec<Output>? = nil
        ) {
            self.upstream = upstream
            self.maxPublishers = maxPublishers
            self.transform = transform
            self.state = outputCodec == nil ? nil : state
            self.outputCodec = outputCodec
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let outer = Outer(downstream: subscriber, maxPublishers: maxPublishers, transform: transform, slot: state?.slot)
            subscriber.receive(subscription: outer)
            if let state, let outputCodec { outer.checkpoint(state, outputCodec) }
            upstream.receive(subscriber: outer)
        }

        private final class Outer<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == NewPublisher.Output, Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            /// `nil` once the downstream cancelled or received its completion.
            private var downstream: Downstream?
            private let maxPublishers: Subscribers.Demand
            private let transform: (Upstream.Output) -> NewPublisher
            private var upstreamSubscription: (any Subscription)?
            private var upstreamFinished = false
            /// The live inner subscriptions by index (the order in which their publishers were produced).
            private var inners: [Int: any Subscription] = [:]
            private var nextIndex = 0
            /// Inner publishers subscribed to that have not yet sent their subscription.
            private var pendingInners = 0
            /// Values that arrived without downstream demand, with the index of their inner.
            private var buffer = Deque<(index: Int, value: NewPublisher.Output)>()
            private var demand = Subscribers.Demand.none
            /// True while a value is being delivered downstream.
            private var deliveringDownstream = false
            /// True while an inner is being asked for one more value from the buffer drain.
            private var requestingInner = false
            /// Where the inners are checkpointed: each is built in a scope of its own there.
            private let slot: OperatorStateSlot?
            /// The upstream value that built each live inner, by index (when checkpointed).
            private var inputs: [Int: Upstream.Output] = [:]

            init(
                downstream: Downstream, maxPublishers: Subscribers.Demand, transform: @escaping (Upstream.Output) -> NewPublisher,
                slot: OperatorStateSlot?
            ) {
                self.downstream = downstream
                self.maxPublishers = maxPublishers
                self.transform = transform
                self.slot = slot
            }

            // MARK: Checkpoint

            /// Restores the inners, buffered values and next index saved in `state`, and
            /// attaches their saving. Runs before the upstream is subscribed.
            func checkpoint(_ state: OperatorState<Upstream.Output>, _ outputCodec: StateCodec<NewPublisher.Output>) {
                let codec = state.codec
                var restoredInners: [(index: Int, input: Upstream.Output)] = []
                var restoredBuffer: [(index: Int, value: NewPublisher.Output)] = []
                var restoredNext = 0
                let restored = state.restore("flatMap") { snapshot throws(CheckpointError) in
                    restoredNext = try snapshot.int("next")
                    for item in try snapshot.field("inners", StateCodec<Value>.value.array) {
                        guard case let .array(pair) = item, pair.count == 2, let index = pair[0].intValue else {
                            throw CheckpointError(.malformed, "an inner of 'flatMap' is not [index, value]")
                        }
                        restoredInners.append((Int(index), try codec.decode(pair[1])))
                    }
                    for item in try snapshot.field("buffer", StateCodec<Value>.value.array) {
                        guard case let .array(pair) = item, pair.count == 2, let index = pair[0].intValue else {
                            throw CheckpointError(.malformed, "a buffered value of 'flatMap' is not [index, value]")
                        }
                        restoredBuffer.append((Int(index), try outputCodec.decode(pair[1])))
                    }
                }
                state.attach("flatMap") { [weak self] in
                    guard let self, self.downstream != nil else { return nil }
                    return [
                        "next": .int(Int64(self.nextIndex)),
                        "inners": .array(self.inputs.keys.sorted().map { .array([.int(Int64($0)), codec.encode(self.inputs[$0]!)]) }),
                        "buffer": .array(self.buffer.map { .array([.int(Int64($0.index)), outputCodec.encode($0.value)]) }),
                    ]
                }
                guard restored else { return }
                nextIndex = restoredNext
                buffer = Deque(restoredBuffer)
                for (index, input) in restoredInners {
                    guard downstream != nil else { return }
                    start(input, at: index)
                }
            }

            /// Builds the inner publisher of `input` (in its scope, when checkpointed) and subscribes it as number `index`.
            private func start(_ input: Upstream.Output, at index: Int) {
                let child: NewPublisher
                if let slot {
                    inputs[index] = input
                    child = slot.withScope(String(index)) { transform(input) }
                } else {
                    child = transform(input)
                }
                pendingInners += 1
                child.receive(subscriber: Side(index: index, outer: self))
            }

            /// Forgets the checkpointed inner `index` (it has ended).
            private func forget(_ index: Int) {
                guard let slot, inputs.removeValue(forKey: index) != nil else { return }
                slot.dropScope(String(index))
            }

            // MARK: Upstream

            func receive(subscription: any Subscription) {
                guard upstreamSubscription == nil, !upstreamFinished, downstream != nil else {
                    subscription.cancel()
                    return
                }
                upstreamSubscription = subscription
                // Inners restored from a checkpoint count among the publishers already asked for.
                let live = inners.count + pendingInners
                if let max = maxPublishers.max {
                    if max > live { subscription.request(.max(max - live)) }
                } else {
                    subscription.request(.unlimited)
                }
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard downstream != nil else { return .none }
                let index = nextIndex
                nextIndex += 1
                start(input, at: index)
                return .none
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard !upstreamFinished else { return }
                upstreamSubscription = nil
                upstreamFinished = true
                switch completion {
                case .finished:
                    finishIfDone()
                case .failure:
                    guard let downstream = downstream.take() else { return }
                    buffer.removeAll()
                    cancelInners(except: nil)
                    downstream.receive(completion: completion)
                }
            }

            // MARK: Downstream

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0 else { return }
                if deliveringDownstream {
                    self.demand += demand
                    return
                }
                guard downstream != nil else { return }
                if demand.isUnlimited {
                    self.demand = .unlimited
                    let pending = buffer
                    buffer.removeAll()
                    deliveringDownstream = true
                    for item in pending {
                        guard let downstream else { break }
                        _ = downstream.receive(item.value)
                    }
                    deliveringDownstream = false
                    for index in inners.keys.sorted() {
                        guard downstream != nil else { break }
                        inners[index]?.request(.unlimited)
                    }
                } else {
                    self.demand += demand
                    while self.demand > 0, let item = buffer.popFirst() {
                        guard let downstream else { return }
                        self.demand -= 1
                        let inner = inners[item.index]
                        deliveringDownstream = true
                        let more = downstream.receive(item.value)
                        deliveringDownstream = false
                        if more > 0 { self.demand += more }
                        if let inner, self.downstream != nil {
                            requestingInner = true
                            inner.request(.max(1))
                            requestingInner = false
                        }
                    }
                }
                finishIfDone()
            }

            func cancel() {
                guard downstream.take() != nil else { return }
                buffer.removeAll()
                cancelInners(except: nil)
                upstreamSubscription.take()?.cancel()
            }

            // MARK: Inners

            fileprivate func innerReceive(subscription: any Subscription, index: Int) {
                pendingInners -= 1
                guard downstream != nil, inners[index] == nil else {
                    subscription.cancel()
                    return
                }
                inners[index] = subscription
                // A restored inner whose value waits in the buffer is asked for more once it is delivered.
                if !demand.isUnlimited, buffer.contains(where: { $0.index == index }) { return }
                subscription.request(demand.isUnlimited ? .unlimited : .max(1))
            }

            fileprivate func innerReceive(_ input: NewPublisher.Output, index: Int) -> Subscribers.Demand {
                guard let downstream else { return .none }
                if demand.isUnlimited {
                    deliveringDownstream = true
                    _ = downstream.receive(input)
                    deliveringDownstream = false
                    return .none
                }
                if demand == 0 || requestingInner {
                    buffer.append((index, input))
                    return .none
                }
                demand -= 1
                deliveringDownstream = true
                let more = downstream.receive(input)
                deliveringDownstream = false
                if more > 0 { demand += more }
                return .max(1)
            }

            fileprivate func innerReceive(completion: Subscribers.Completion<Failure>, index: Int) {
                switch completion {
                case .finished:
                    guard inners.removeValue(forKey: index) != nil else { return }
                    forget(index)
                    if !finishIfDone(), !maxPublishers.isUnlimited {
                        upstreamSubscription?.request(.max(1))
                    }
                case .failure:
                    guard inners[index] != nil, let downstream = downstream.take() else { return }
                    inners[index] = nil
                    buffer.removeAll()
                    cancelInners(except: nil)
                    upstreamSubscription.take()?.cancel()
                    downstream.receive(completion: completion)
                }
            }

            // MARK: Helpers

            private func cancelInners(except skipped: Int?) {
                let current = inners
                inners = [:]
                for index in inputs.keys { forget(index) }
                for index in current.keys.sorted() where index != skipped {
                    current[index]?.cancel()
                }
            }

            /// Sends `finished` when the upstream and every inner are done and nothing is buffered.
            @discardableResult
            private func finishIfDone() -> Bool {
                guard upstreamFinished, buffer.isEmpty, inners.isEmpty, pendingInners == 0,
                      let downstream = downstream.take() else { return false }
                downstream.receive(completion: .finished)
                return true
            }
        }

        private struct Side<Downstream: Subscriber>: Subscriber
        where Downstream.Input == NewPublisher.Output, Downstream.Failure == Upstream.Failure {
            typealias Input = NewPublisher.Output
            typealias Failure = NewPublisher.Failure

            let index: Int
            let outer: Outer<Downstream>
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { outer.innerReceive(subscription: subscription, index: index) }
            func receive(_ input: Input) -> Subscribers.Demand { outer.innerReceive(input, index: index) }
            func receive(completion: Subscribers.Completion<Failure>) { outer.innerReceive(completion: completion, index: index) }
        }
    }
}

extension Publisher {
    /// Maps each value to a publisher and merges their values; at most `maxPublishers`
    /// inner publishers are active at once.
    public func flatMap<T, P: Publisher>(
        maxPublishers: Subscribers.Demand = .unlimited,
        _ transform: @escaping (Output) -> P
    ) -> Publishers.FlatMap<P, Self> where T == P.Output, P.Failure == Failure {
        Publishers.FlatMap(upstream: self, maxPublishers: maxPublishers, transform: transform)
    }

    /// Flat map to publishers that cannot fail: they take this publisher's failure type.
    public func flatMap<P: Publisher>(
        maxPublishers: Subscribers.Demand = .unlimited,
        _ transform: @escaping (Output) -> P
    ) -> Publishers.FlatMap<Publishers.SetFailureType<P, Failure>, Self> where P.Failure == Never {
        Publishers.FlatMap(upstream: self, maxPublishers: maxPublishers) {
            transform($0).setFailureType(to: Failure.self)
        }
    }
}

extension Publisher where Failure == Never {
    /// Flat map of a publisher that cannot fail to publishers that may: this publisher
    /// takes their failure type.
    public func flatMap<P: Publisher>(
        maxPublishers: Subscribers.Demand = .unlimited,
        _ transform: @escaping (Output) -> P
    ) -> Publishers.FlatMap<P, Publishers.SetFailureType<Self, P.Failure>> {
        Publishers.FlatMap(upstream: setFailureType(to: P.Failure.self), maxPublishers: maxPublishers, transform: transform)
    }

    /// Flat map where neither side can fail.
    public func flatMap<P: Publisher>(
        maxPublishers: Subscribers.Demand = .unlimited,
        _ transform: @escaping (Output) -> P
    ) -> Publishers.FlatMap<P, Self> where P.Failure == Never {
        Publishers.FlatMap(upstream: self, maxPublishers: maxPublishers, transform: transform)
    }
}
