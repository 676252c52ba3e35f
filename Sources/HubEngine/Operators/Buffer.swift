import DequeModule
import HubValue

extension Publishers {
    /// When the upstream is asked for values: all at once, or to keep the buffer full,
    /// as Combine's `Publishers.PrefetchStrategy`.
    public enum PrefetchStrategy: Equatable, Hashable, Sendable {
        /// Requests `size` values on subscription, then one more for each value delivered downstream.
        case keepFull
        /// Requests `.unlimited` on subscription (as OpenCombine), buffering what the downstream has not asked for.
        case byRequest
    }

    /// What a full buffer does with one more value, as Combine's `Publishers.BufferingStrategy`.
    public enum BufferingStrategy<Failure: Error> {
        /// Drops the value that just arrived.
        case dropNewest
        /// Drops the oldest buffered value to make room.
        case dropOldest
        /// Cancels the upstream and fails with the closure's error.
        case customError(() -> Failure)
    }

    /// Buffers up to `size` upstream values the downstream has not asked for yet, as
    /// Combine's `Publishers.Buffer`.
    ///
    /// It requests upstream before handing its subscription downstream:
    /// `.max(size)` with ``PrefetchStrategy/keepFull`` (then one more per value
    /// delivered) or `.unlimited` with ``PrefetchStrategy/byRequest``, as
    /// OpenCombine. A `.finished` waits behind the buffered values and for a
    /// nonzero demand (even when the buffer is empty), as OpenCombine; a failure
    /// from upstream is delivered at once if the downstream has no demand (the
    /// buffered values are then lost), else after the values it can take. With
    /// ``BufferingStrategy/customError(_:)`` a value arriving at a full buffer
    /// cancels the upstream and the error is delivered as an upstream failure would
    /// be, on the next drain (the next downstream request), as OpenCombine does.
    ///
    /// With a `state`, the buffered values are checkpointed: a subscription restores them
    /// (with ``PrefetchStrategy/keepFull`` it then requests only what keeps the buffer full).
    public struct Buffer<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher buffered.
        public let upstream: Upstream
        /// The most values held.
        public let size: Int
        /// When the upstream is asked for values.
        public let prefetch: PrefetchStrategy
        /// What a full buffer does with one more value.
        public let whenFull: BufferingStrategy<Failure>

        /// Where the buffered values are checkpointed, if they are.
        public let state: OperatorState<Output>?

        /// A buffer of `size` values in front of `upstream`, checkpointed in `state` if given.
        public init(
            upstream: Upstream, size: Int, prefetch: PrefetchStrategy, whenFull: BufferingStrategy<Failure>,
            state: OperatorState<Output>? = nil
        ) {
            self.upstream = upstream
            self.size = size
            self.prefetch = prefetch
            self.whenFull = whenFull
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, size: size, prefetch: prefetch, whenFull: whenFull)
            if let state {
                let codec = state.codec.array
                let size = self.size
                state.restore("buffer") { snapshot throws(CheckpointError) in
                    let values = try snapshot.field("values", codec)
                    guard values.count <= size else {
                        throw CheckpointError(.malformed, "buffer(\(size)) restored \(values.count) values")
                    }
                    inner.values = Deque(values)
                }
                state.attach("buffer") { [weak inner] in
                    guard let inner, inner.isLive else { return nil }
                    return ["values": codec.encode(Array(inner.values))]
                }
            }
            upstream.receive(subscriber: inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private enum State {
                case awaitingSubscription
                case subscribed(any Subscription)
                case terminal
            }

            private let downstream: Downstream
            private let size: Int
            private let prefetch: PrefetchStrategy
            private let whenFull: BufferingStrategy<Failure>
            private var state = State.awaitingSubscription
            fileprivate var values = Deque<Input>()
            private var demand = Subscribers.Demand.none
            private var terminal: Subscribers.Completion<Failure>?
            private var draining = false

            init(downstream: Downstream, size: Int, prefetch: PrefetchStrategy, whenFull: BufferingStrategy<Failure>) {
                self.downstream = downstream
                self.size = size
                self.prefetch = prefetch
                self.whenFull = whenFull
            }

            private var isSubscribed: Bool {
                if case .subscribed = state { return true }
                return false
            }

            /// Whether it has a state to checkpoint (not ended).
            fileprivate var isLive: Bool {
                if case .terminal = state { return false }
                return terminal == nil
            }

            func receive(subscription: any Subscription) {
                guard case .awaitingSubscription = state else {
                    subscription.cancel()
                    return
                }
                state = .subscribed(subscription)
                switch prefetch {
                // Restored values take their places in the buffer.
                case .keepFull: if size > values.count { subscription.request(.max(size - values.count)) }
                case .byRequest: subscription.request(.unlimited)
                }
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard case .subscribed(let subscription) = state else { return .none }
                if case .failure = terminal { return .none }
                if values.count >= size {
                    switch whenFull {
                    case .dropNewest:
                        return drain()
                    case .dropOldest:
                        if !values.isEmpty { values.removeFirst() }
                    case .customError(let makeError):
                        terminal = .failure(makeError())
                        subscription.cancel()
                        return .none
                    }
                }
                if size > 0 { values.append(input) }
                return drain()
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard isSubscribed, terminal == nil else { return }
                terminal = completion
                _ = drain()
            }

            func request(_ demand: Subscribers.Demand) {
                guard case .subscribed(let subscription) = state else { return }
                self.demand += demand
                guard !draining else { return }
                let more = drain()
                if more > 0, isSubscribed { subscription.request(more) }
            }

            func cancel() {
                guard case .subscribed(let subscription) = state else { return }
                state = .terminal
                values.removeAll()
                subscription.cancel()
            }

            /// Delivers what the demand allows, then the completion if it is due; returns the
            /// upstream demand the deliveries freed (keepFull only).
            private func drain() -> Subscribers.Demand {
                var upstreamDemand = Subscribers.Demand.none
                draining = true
                defer { draining = false }
                while isSubscribed {
                    if demand == .none || values.isEmpty {
                        // With demand, the completion follows the last value; without demand only a
                        // failure is delivered (overtaking the buffer), `.finished` waits for a request (as OpenCombine).
                        if let completion = terminal, demand > 0 || completion.failure != nil {
                            state = .terminal
                            values.removeAll()
                            downstream.receive(completion: completion)
                        }
                        return upstreamDemand
                    }
                    let value = values.removeFirst()
                    demand -= 1
                    let more = downstream.receive(value)
                    if prefetch == .keepFull { upstreamDemand += 1 }
                    demand += more
                }
                return upstreamDemand
            }
        }
    }
}

extension Publisher {
    /// Buffers up to `size` values the downstream has not asked for yet.
    public func buffer(
        size: Int, prefetch: Publishers.PrefetchStrategy, whenFull: Publishers.BufferingStrategy<Failure>
    ) -> Publishers.Buffer<Self> {
        Publishers.Buffer(upstream: self, size: size, prefetch: prefetch, whenFull: whenFull)
    }
}
