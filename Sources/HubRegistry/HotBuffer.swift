import DequeModule
import HubEngine
import HubPipeline
import HubValue
import HubWire

extension Publishers {
    /// The per-subscription buffer in front of a hot source (a subject, a trigger):
    /// it takes every value the source sends and hands them on as the downstream
    /// demands (PROTOCOL.md §5.7).
    ///
    /// It requests `.unlimited` from the source, since a hot source does not
    /// wait. Values beyond the downstream's demand are kept, up to `capacity`;
    /// then `policy` decides: ``OverflowPolicy/error`` cancels the source and
    /// fails with code `overflow`, the others discard a value and count it in
    /// `metrics`. The source's completion is delivered after the buffered
    /// values, without needing demand.
    ///
    /// With a ``memory`` budget, the buffered values' estimated bytes (``weigh``) are
    /// held in it too: a value that would pass the budget's bytes is an overflow like one
    /// beyond the capacity, so that buffers are bounded in bytes, not only in count.
    public struct HotBuffer<Upstream: Publisher>: Publisher where Upstream.Failure == HubError {
        public typealias Output = Upstream.Output
        public typealias Failure = HubError

        /// The hot source.
        public let upstream: Upstream
        /// The most values kept (at least 1).
        public let capacity: Int
        /// What a full buffer does with one more value.
        public let policy: OverflowPolicy
        /// Where drops and overflows are counted.
        public let metrics: HubMetrics?
        /// The budget buffered values are held in, if any.
        public let memory: ResourceBudget?
        /// The estimated bytes of one value (used with ``memory``).
        public let weigh: ((Output) -> Int)?

        /// A buffer of `capacity` values with `policy` in front of `upstream`; with
        /// `memory`, also bounded by that budget's bytes (each value weighed by `weigh`).
        public init(
            upstream: Upstream, capacity: Int, policy: OverflowPolicy, metrics: HubMetrics?,
            memory: ResourceBudget? = nil, weigh: ((Output) -> Int)? = nil
        ) {
            self.upstream = upstream
            self.capacity = Swift.max(1, capacity)
            self.policy = policy
            self.metrics = metrics
            self.memory = weigh == nil ? nil : memory
            self.weigh = weigh
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == HubError {
            let inner = Inner(
                downstream: subscriber, capacity: capacity, policy: policy, metrics: metrics,
                lease: memory.map { ResourceLease(on: $0) }, weigh: weigh)
            upstream.receive(subscriber: inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == HubError {
            typealias Input = Upstream.Output
            typealias Failure = HubError

            // @exclusivity(unchecked) on the hot fields below: this object is confined to its
            // event loop and nothing re-enters it while one of these accesses is open, so the dynamic
            // check (a runtime call per access, the release builds once skipped it by a flag) only costs.
            @exclusivity(unchecked) private var downstream: Downstream?
            @exclusivity(unchecked) private var upstream: (any Subscription)?
            private let capacity: Int
            private let policy: OverflowPolicy
            private let metrics: HubMetrics?
            @exclusivity(unchecked) private var buffer = Deque<Input>()
            @exclusivity(unchecked) private var demand = Subscribers.Demand.none
            @exclusivity(unchecked) private var pendingCompletion: Subscribers.Completion<HubError>?
            @exclusivity(unchecked) private var draining = false
            /// Holds the buffered values' bytes; `nil` when the buffer is bounded by count only.
            private let lease: ResourceLease?
            private let weigh: ((Input) -> Int)?
            /// The bytes of each buffered value, in buffer order (with a ``lease`` only).
            @exclusivity(unchecked) private var sizes = Deque<Int>()

            init(
                downstream: Downstream, capacity: Int, policy: OverflowPolicy, metrics: HubMetrics?,
                lease: ResourceLease?, weigh: ((Input) -> Int)?
            ) {
                self.downstream = downstream
                self.capacity = capacity
                self.policy = policy
                self.metrics = metrics
                self.lease = lease
                self.weigh = weigh
            }

            // MARK: The buffer and its bytes

            /// Appends `input` if its bytes fit the budget; returns whether it did.
            private func append(_ input: Input) -> Bool {
                if let lease, let weigh {
                    let bytes = weigh(input)
                    do throws(HubError) {
                        try lease.hold(bytes, for: "buffer")
                    } catch {
                        return false
                    }
                    sizes.append(bytes)
                }
                buffer.append(input)
                return true
            }

            private func removeFirst() -> Input {
                if let lease { lease.release(sizes.removeFirst()) }
                return buffer.removeFirst()
            }

            private func removeAll() {
                buffer.removeAll()
                if let lease {
                    sizes.removeAll()
                    lease.release()
                }
            }

            /// What the policy does when `input` does not fit (the count or the bytes).
            private func overflow(_ input: Input, byBytes: Bool) {
                guard let downstream else { return }
                switch policy {
                case .error:
                    metrics?.recordOverflow()
                    let buffered = buffer.count
                    removeAll()
                    upstream.take()?.cancel()
                    self.downstream = nil
                    let limit = byBytes
                        ? "its share of \(lease?.budgetDescription ?? "memory")"
                        : "\(capacity) values"
                    downstream.receive(completion: .failure(HubError(
                        .overflow, "the subscription's buffer of \(limit) overflowed",
                        data: ["buffered": .int(Int64(buffered))])))
                case .dropOldest:
                    // Make room: drop the oldest until the arriving value fits (or nothing is left).
                    var dropped = 0
                    if !byBytes {
                        _ = removeFirst()
                        dropped += 1
                    }
                    while !append(input) {
                        guard !buffer.isEmpty else {
                            dropped += 1  // the arriving value alone is more than the budget allows
                            break
                        }
                        _ = removeFirst()
                        dropped += 1
                    }
                    metrics?.recordDropped(dropped)
                case .dropNewest:
                    metrics?.recordDropped(1)
                case .latest:
                    metrics?.recordDropped(buffer.count)
                    removeAll()
                    if !append(input) { metrics?.recordDropped(1) }
                }
            }

            func receive(subscription: any Subscription) {
                guard upstream == nil, let downstream else {
                    subscription.cancel()
                    return
                }
                upstream = subscription
                downstream.receive(subscription: self)
                // The downstream may have cancelled from inside receive(subscription:).
                guard self.downstream != nil else { return }
                subscription.request(.unlimited)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard let downstream, pendingCompletion == nil else { return .none }
                if buffer.isEmpty, demand > 0, !draining {
                    demand -= 1
                    let more = downstream.receive(input)
                    demand += more
                    if !buffer.isEmpty { drain() }
                    return .none
                }
                if buffer.count < capacity {
                    if append(input) {
                        drain()
                    } else {
                        overflow(input, byBytes: true)
                    }
                    return .none
                }
                overflow(input, byBytes: false)
                return .none
            }

            func receive(completion: Subscribers.Completion<HubError>) {
                guard downstream != nil, pendingCompletion == nil else { return }
                upstream = nil
                pendingCompletion = completion
                drain()
            }

            func request(_ demand: Subscribers.Demand) {
                guard downstream != nil, demand > 0 else { return }
                self.demand += demand
                drain()
            }

            func cancel() {
                guard downstream != nil else { return }
                downstream = nil
                removeAll()
                pendingCompletion = nil
                upstream.take()?.cancel()
            }

            /// Delivers buffered values while there is demand, then a pending completion
            /// once the buffer is empty. Reentrant requests only add demand.
            private func drain() {
                guard !draining else { return }
                draining = true
                defer { draining = false }
                while let downstream {
                    if !buffer.isEmpty, demand > 0 {
                        let value = removeFirst()
                        demand -= 1
                        demand += downstream.receive(value)
                        continue
                    }
                    if buffer.isEmpty, let completion = pendingCompletion {
                        self.downstream = nil
                        pendingCompletion = nil
                        downstream.receive(completion: completion)
                    }
                    return
                }
            }
        }
    }
}

extension Publisher where Failure == HubError {
    /// Buffers a hot source for one subscription; see ``Publishers/HotBuffer``.
    public func hotBuffer(capacity: Int, policy: OverflowPolicy, metrics: HubMetrics? = nil) -> Publishers.HotBuffer<Self> {
        Publishers.HotBuffer(upstream: self, capacity: capacity, policy: policy, metrics: metrics)
    }

    /// Buffers a hot source of values for one subscription, bounded by `capacity` values
    /// and by the bytes `memory` still allows; see ``Publishers/HotBuffer``.
    public func hotBuffer(
        capacity: Int, policy: OverflowPolicy, metrics: HubMetrics? = nil, memory: ResourceBudget?
    ) -> Publishers.HotBuffer<Self> where Output == Value {
        Publishers.HotBuffer(
            upstream: self, capacity: capacity, policy: policy, metrics: metrics, memory: memory,
            weigh: memory == nil ? nil : { $0.estimatedBytes })
    }
}
