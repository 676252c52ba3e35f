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
    /// fails with code `overflow`, the drop policies discard a value and count it in
    /// `metrics`. ``OverflowPolicy/block`` keeps the value and congests the
    /// subject's ``SubjectCongestion`` (its publishers are slowed down) until the
    /// buffer is down to half its capacity; values the broker cannot hold back (from a
    /// pipeline, another node) still come, up to ``blockLimit`` times the capacity,
    /// beyond which it fails as `error` does. The source's completion is delivered
    /// after the buffered values, without needing demand.
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
        /// Where they are counted for the buffered name, too.
        public let counters: NameCounters?
        /// The budget buffered values are held in, if any.
        public let memory: ResourceBudget?
        /// The estimated bytes of one value (used with ``memory``).
        public let weigh: ((Output) -> Int)?
        /// When given, who sent each value: read as a value arrives, set again while a
        /// buffered value is delivered, so that what the value causes downstream (a pipeline
        /// failure that is logged) still knows its sender.
        public let origin: ValueOrigin?
        /// When given, the buffer is one of its meters: it reports what its downstream
        /// wants and not yet has, and when that rises (a subject with history whose values
        /// are fetched from elsewhere fetches within it).
        public let liveDemand: LiveDemand?
        /// The subject congested by a full buffer with ``OverflowPolicy/block``.
        public let congestion: SubjectCongestion?

        /// How many times its capacity a buffer with ``OverflowPolicy/block`` holds at
        /// most (values arriving while its publishers are slowed down) before it fails.
        public static var blockLimit: Int { 4 }

        /// A buffer of `capacity` values with `policy` in front of `upstream`; with
        /// `memory`, also bounded by that budget's bytes (each value weighed by `weigh`);
        /// with `liveDemand`, metered there.
        public init(
            upstream: Upstream, capacity: Int, policy: OverflowPolicy, metrics: HubMetrics?, counters: NameCounters? = nil,
            memory: ResourceBudget? = nil, weigh: ((Output) -> Int)? = nil, origin: ValueOrigin? = nil,
            liveDemand: LiveDemand? = nil, congestion: SubjectCongestion? = nil
        ) {
            self.upstream = upstream
            self.capacity = Swift.max(1, capacity)
            self.policy = policy
            self.metrics = metrics
            self.counters = counters
            self.memory = weigh == nil ? nil : memory
            self.weigh = weigh
            self.origin = origin
            self.liveDemand = liveDemand
            self.congestion = policy == .block ? congestion : nil
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == HubError {
            let inner = Inner(
                downstream: subscriber, capacity: capacity, policy: policy, metrics: metrics, counters: counters,
                lease: memory.map { ResourceLease(on: $0) }, weigh: weigh, origin: origin, liveDemand: liveDemand,
                congestion: congestion)
            upstream.receive(subscriber: inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == HubError {
            typealias Input = Upstream.Output
            typealias Failure = HubError

            /// The downstream, immutable, so that a delivery borrows it instead of copying it
            /// (a copy of an `AnySubscriber` retains and releases its three closures).
            private final class Box {
                let downstream: Downstream
                init(_ downstream: Downstream) { self.downstream = downstream }
            }

            // @exclusivity(unchecked) on the hot fields below: this object is confined to its
            // event loop and nothing re-enters it while one of these accesses is open, so the dynamic
            // check (a runtime call per access, the release builds once skipped it by a flag) only costs.
            /// Keeps the downstream alive; dropped once detached and no delivery is running.
            @exclusivity(unchecked) private var box: Box?
            /// The downstream as deliveries call it (unretained), or `nil` once detached.
            @exclusivity(unchecked) private var target: Unmanaged<Box>?
            /// Deliveries running (more than one when the downstream re-enters).
            @exclusivity(unchecked) private var delivering = 0
            @exclusivity(unchecked) private var upstream: (any Subscription)?
            private let capacity: Int
            private let policy: OverflowPolicy
            private let metrics: HubMetrics?
            private let counters: NameCounters?
            @exclusivity(unchecked) private var buffer = Deque<Input>()
            @exclusivity(unchecked) private var demand = Subscribers.Demand.none
            @exclusivity(unchecked) private var pendingCompletion: Subscribers.Completion<HubError>?
            @exclusivity(unchecked) private var draining = false
            /// Holds the buffered values' bytes; `nil` when the buffer is bounded by count only.
            private let lease: ResourceLease?
            private let weigh: ((Input) -> Int)?
            /// The bytes of each buffered value, in buffer order (with a ``lease`` only).
            @exclusivity(unchecked) private var sizes = Deque<Int>()

            private let origin: ValueOrigin?
            /// The sender of each buffered value, in buffer order (with an ``origin`` only).
            private var senders = Deque<String?>()
            /// Where this buffer is a meter, while attached.
            private var liveDemand: LiveDemand?
            /// The subject it congests when full (policy ``OverflowPolicy/block`` only).
            private let congestion: SubjectCongestion?
            /// Whether it congests the subject now.
            private var congesting = false

            init(
                downstream: Downstream, capacity: Int, policy: OverflowPolicy, metrics: HubMetrics?, counters: NameCounters?,
                lease: ResourceLease?, weigh: ((Input) -> Int)?, origin: ValueOrigin?, liveDemand: LiveDemand?,
                congestion: SubjectCongestion?
            ) {
                let box = Box(downstream)
                self.box = box
                self.target = Unmanaged.passUnretained(box)
                self.capacity = capacity
                self.policy = policy
                self.metrics = metrics
                self.counters = counters
                self.lease = lease
                self.weigh = weigh
                self.origin = origin
                self.liveDemand = liveDemand
                self.congestion = congestion
            }

            /// Congests the subject when the buffer is full; relieves it once down to half.
            private func checkCongestion() {
                guard let congestion else { return }
                if buffer.count >= capacity {
                    guard !congesting else { return }
                    congesting = true
                    congestion.congest(ObjectIdentifier(self)) { [weak self] in
                        self?.fail("\(self?.capacity ?? 0) values, full for longer than its publishers may wait,")
                    }
                } else if congesting, buffer.count <= capacity / 2 {
                    congesting = false
                    congestion.relieve(ObjectIdentifier(self))
                }
            }

            /// What the downstream wants and the buffer does not hold yet (its meter).
            private var want: Int {
                guard let max = demand.max else { return .max }
                return Swift.max(0, max - buffer.count)
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
                if let origin { senders.append(origin.sender) }
                return true
            }

            private func removeFirst() -> Input {
                if let lease { lease.release(sizes.removeFirst()) }
                if origin != nil { senders.removeFirst() }
                return buffer.removeFirst()
            }

            private func removeAll() {
                buffer.removeAll()
                senders.removeAll()
                if let lease {
                    sizes.removeAll()
                    lease.release()
                }
            }

            private func recordDropped(_ count: Int) {
                metrics?.recordDropped(count)
                counters?.dropped += count
            }

            /// What the policy does when `input` does not fit (the count, or with a budget the bytes).
            private func overflow(_ input: Input, byBytes: Bool) {
                switch policy {
                case .error:
                    fail(byBytes ? "its share of \(lease?.budgetDescription ?? "memory")" : "\(capacity) values")
                case .block:
                    // Held while the publishers slow down, up to the hard bound.
                    if byBytes {
                        fail("its share of \(lease?.budgetDescription ?? "memory")")
                    } else if buffer.count >= capacity &* HotBuffer.blockLimit {
                        fail("\(capacity) values, \(HotBuffer.blockLimit) times over, while its publishers were slowed down,")
                    } else if !append(input) {
                        fail("its share of \(lease?.budgetDescription ?? "memory")")
                    }
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
                    recordDropped(dropped)
                case .dropNewest:
                    recordDropped(1)
                case .latest:
                    recordDropped(buffer.count)
                    removeAll()
                    if !append(input) { recordDropped(1) }
                }
            }

            /// Ends the subscription with `overflow`: its buffer of `limit` overflowed.
            private func fail(_ limit: String) {
                metrics?.recordOverflow()
                counters?.overflows += 1
                let buffered = buffer.count
                removeAll()
                upstream.take()?.cancel()
                let last = detach()
                last?.downstream.receive(completion: .failure(HubError(
                    .overflow, "the subscription's buffer of \(limit) overflowed",
                    data: ["buffered": .int(Int64(buffered))])))
            }

            /// Hands `value` to the downstream through the unretained box.
            @inline(__always)
            private func deliver(_ value: Input, to target: Unmanaged<Box>) -> Subscribers.Demand {
                delivering += 1
                let more = target._withUnsafeGuaranteedRef { $0.downstream.receive(value) }
                delivering -= 1
                if self.target == nil, delivering == 0 { box = nil }
                return more
            }

            /// Stops deliveries; returns the box (kept alive by the caller) for a last call.
            private func detach() -> Box? {
                liveDemand.take()?.unmeter(ObjectIdentifier(self))
                if congesting {
                    congesting = false
                    congestion?.relieve(ObjectIdentifier(self))
                }
                let last = box
                target = nil
                if delivering == 0 { box = nil }
                return last
            }

            func receive(subscription: any Subscription) {
                guard upstream == nil, let downstream = box?.downstream, target != nil else {
                    subscription.cancel()
                    return
                }
                upstream = subscription
                liveDemand?.meter(ObjectIdentifier(self)) { [weak self] in self?.want ?? 0 }
                downstream.receive(subscription: self)
                // The downstream may have cancelled from inside receive(subscription:).
                guard target != nil else { return }
                subscription.request(.unlimited)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard let target, pendingCompletion == nil else { return .none }
                if buffer.isEmpty, demand > 0, !draining {
                    demand -= 1
                    let more = deliver(input, to: target)
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
                } else {
                    overflow(input, byBytes: false)
                }
                if congestion != nil { checkCongestion() }
                return .none
            }

            func receive(completion: Subscribers.Completion<HubError>) {
                guard target != nil, pendingCompletion == nil else { return }
                upstream = nil
                pendingCompletion = completion
                drain()
            }

            func request(_ demand: Subscribers.Demand) {
                guard target != nil, demand > 0 else { return }
                self.demand += demand
                drain()
                if congestion != nil { checkCongestion() }
                liveDemand?.rose()
            }

            func cancel() {
                guard target != nil else { return }
                _ = detach()
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
                while let target {
                    if !buffer.isEmpty, demand > 0 {
                        guard let origin else {
                            let value = removeFirst()
                            demand -= 1
                            demand += deliver(value, to: target)
                            continue
                        }
                        // The buffered value's sender, for what it causes downstream.
                        let sender = senders.first ?? nil
                        let value = removeFirst()
                        demand -= 1
                        let previous = origin.sender
                        origin.sender = sender
                        demand += deliver(value, to: target)
                        origin.sender = previous
                        continue
                    }
                    if buffer.isEmpty, let completion = pendingCompletion {
                        pendingCompletion = nil
                        let last = detach()
                        last?.downstream.receive(completion: completion)
                    }
                    return
                }
            }
        }
    }
}

extension Publisher where Failure == HubError {
    /// Buffers a hot source for one subscription; see ``Publishers/HotBuffer``.
    public func hotBuffer(
        capacity: Int, policy: OverflowPolicy, metrics: HubMetrics? = nil, counters: NameCounters? = nil
    ) -> Publishers.HotBuffer<Self> {
        Publishers.HotBuffer(upstream: self, capacity: capacity, policy: policy, metrics: metrics, counters: counters)
    }

    /// Buffers a hot source of values for one subscription, bounded by `capacity` values
    /// and by the bytes `memory` still allows; see ``Publishers/HotBuffer``.
    public func hotBuffer(
        capacity: Int, policy: OverflowPolicy, metrics: HubMetrics? = nil, counters: NameCounters? = nil,
        memory: ResourceBudget?, origin: ValueOrigin? = nil, congestion: SubjectCongestion? = nil
    ) -> Publishers.HotBuffer<Self> where Output == Value {
        Publishers.HotBuffer(
            upstream: self, capacity: capacity, policy: policy, metrics: metrics, counters: counters, memory: memory,
            weigh: memory == nil ? nil : { $0.estimatedBytes }, origin: origin, congestion: congestion)
    }
}
