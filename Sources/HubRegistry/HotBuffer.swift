import DequeModule
import HubEngine
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
        /// When given, who sent each value: read as a value arrives, set again while a
        /// buffered value is delivered, so that what the value causes downstream (a pipeline
        /// failure that is logged) still knows its sender.
        public let origin: ValueOrigin?

        /// A buffer of `capacity` values with `policy` in front of `upstream`.
        public init(upstream: Upstream, capacity: Int, policy: OverflowPolicy, metrics: HubMetrics?, origin: ValueOrigin? = nil) {
            self.upstream = upstream
            self.capacity = Swift.max(1, capacity)
            self.policy = policy
            self.metrics = metrics
            self.origin = origin
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == HubError {
            let inner = Inner(downstream: subscriber, capacity: capacity, policy: policy, metrics: metrics, origin: origin)
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
            private let origin: ValueOrigin?
            /// The sender of each buffered value, in step with `buffer` (only with an `origin`).
            private var senders = Deque<String?>()

            init(downstream: Downstream, capacity: Int, policy: OverflowPolicy, metrics: HubMetrics?, origin: ValueOrigin?) {
                self.downstream = downstream
                self.capacity = capacity
                self.policy = policy
                self.metrics = metrics
                self.origin = origin
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
                    buffer.append(input)
                    if let origin { senders.append(origin.sender) }
                    drain()
                    return .none
                }
                switch policy {
                case .error:
                    metrics?.recordOverflow()
                    let dropped = buffer.count + 1
                    buffer.removeAll()
                    senders.removeAll()
                    upstream.take()?.cancel()
                    self.downstream = nil
                    downstream.receive(completion: .failure(HubError(
                        .overflow, "the subscription's buffer of \(capacity) values overflowed",
                        data: ["buffered": .int(Int64(dropped - 1))])))
                case .dropOldest:
                    buffer.removeFirst()
                    buffer.append(input)
                    if let origin {
                        senders.removeFirst()
                        senders.append(origin.sender)
                    }
                    metrics?.recordDropped(1)
                case .dropNewest:
                    metrics?.recordDropped(1)
                case .latest:
                    metrics?.recordDropped(buffer.count)
                    buffer.removeAll(keepingCapacity: true)
                    buffer.append(input)
                    if let origin {
                        senders.removeAll(keepingCapacity: true)
                        senders.append(origin.sender)
                    }
                }
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
                buffer.removeAll()
                senders.removeAll()
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
                    if let value = buffer.first, demand > 0 {
                        buffer.removeFirst()
                        demand -= 1
                        if let origin {
                            // The buffered value's sender, for what it causes downstream.
                            let previous = origin.sender
                            origin.sender = senders.removeFirst()
                            demand += downstream.receive(value)
                            origin.sender = previous
                        } else {
                            demand += downstream.receive(value)
                        }
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
    public func hotBuffer(
        capacity: Int, policy: OverflowPolicy, metrics: HubMetrics? = nil, origin: ValueOrigin? = nil
    ) -> Publishers.HotBuffer<Self> {
        Publishers.HotBuffer(upstream: self, capacity: capacity, policy: policy, metrics: metrics, origin: origin)
    }
}
