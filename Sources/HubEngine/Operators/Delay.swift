import DequeModule
import HubValue

extension Publishers {
    /// Delivers every value and the completion `interval` later on a scheduler, as Combine's
    /// `Publishers.Delay`.
    ///
    /// Demand passes through: the downstream's requests go upstream unchanged, and
    /// the demand a delayed value's delivery returns is requested upstream then.
    /// Both `.finished` and a failure are delayed by `interval` too, after the
    /// values already in flight (as OpenCombine). Cancel cancels every scheduled
    /// delivery and the upstream; a cancel after the upstream completed (while the
    /// completion is in flight) suppresses it.
    ///
    /// With a `state`, the values in flight and the time each had left are checkpointed:
    /// a subscription restores them and delivers each when its time is up.
    public struct Delay<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose events are delayed.
        public let upstream: Upstream
        /// How long each event is delayed.
        public let interval: Duration
        /// The scheduler that delivers the events.
        public let scheduler: Context

        /// Where the values in flight are checkpointed, if they are.
        public let state: OperatorState<Output>?

        /// A delay of `upstream`'s events by `interval` on `scheduler`, checkpointed in `state` if given.
        public init(upstream: Upstream, interval: Duration, scheduler: Context, state: OperatorState<Output>? = nil) {
            self.upstream = upstream
            self.interval = interval
            self.scheduler = scheduler
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, interval: interval, scheduler: scheduler)
            if let state {
                inner.tracksInFlight = true
                let codec = state.codec
                state.restore("delay") { snapshot throws(CheckpointError) in
                    guard case let .array(items) = try snapshot.field("inFlight") else {
                        throw CheckpointError(.malformed, "the state of 'delay' has no array 'inFlight'")
                    }
                    var restored: [(Output, Duration)] = []
                    for item in items {
                        guard case let .array(pair) = item, pair.count == 2, let remaining = pair[1].intValue else {
                            throw CheckpointError(.malformed, "a value in flight of 'delay' is not [value, remaining]")
                        }
                        restored.append((try codec.decode(pair[0]), .nanoseconds(Swift.max(0, remaining))))
                    }
                    inner.restored = restored
                    // The upstream had finished: the completion is due when its time is up.
                    if let finishing = snapshot.fields["finishing"]?.intValue {
                        inner.restoredFinishing = .nanoseconds(Swift.max(0, finishing))
                    }
                }
                state.attach("delay") { [weak inner] in inner?.checkpoint(codec) }
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
                case pendingTerminal(any Subscription)
                case terminal

                var subscription: (any Subscription)? {
                    switch self {
                    case .subscribed(let s), .pendingTerminal(let s): return s
                    case .awaitingSubscription, .terminal: return nil
                    }
                }
            }

            private let downstream: Downstream
            private let interval: Duration
            private let scheduler: Context
            private var state = State.awaitingSubscription
            private let deliveries = ScheduledActions()
            /// The values in flight (when checkpointed), oldest first, with when each is due.
            private var inFlight = Deque<(value: Input, due: SchedulerTime)>()
            /// Whether it keeps ``inFlight`` (it is checkpointed).
            fileprivate var tracksInFlight = false
            /// Values in flight restored from a checkpoint, with the time each had left.
            fileprivate var restored: [(Input, Duration)] = []
            /// Upstream demand the restored values took already: taken off the next requests.
            private var owed = 0
            /// The completion in flight when the checkpoint was taken, with the time it had left.
            fileprivate var restoredFinishing: Duration?
            /// When the completion in flight is due (when checkpointed).
            private var finishingAt: SchedulerTime?

            init(downstream: Downstream, interval: Duration, scheduler: Context) {
                self.downstream = downstream
                self.interval = interval
                self.scheduler = scheduler
            }

            private var dueTime: SchedulerTime { scheduler.now.advanced(by: interval) }

            func receive(subscription: any Subscription) {
                guard case .awaitingSubscription = state else {
                    subscription.cancel()
                    return
                }
                state = .subscribed(subscription)
                // The restored values were asked for before the checkpoint.
                owed = restored.count
                for (value, remaining) in restored { schedule(value, at: scheduler.now.advanced(by: remaining)) }
                restored = []
                if let remaining = restoredFinishing.take() {
                    // The upstream finished before the checkpoint: what it would send again is not new.
                    finish(.finished, subscription, at: scheduler.now.advanced(by: remaining))
                    downstream.receive(subscription: self)
                    subscription.cancel()
                    return
                }
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard case .subscribed = state else { return .none }
                schedule(input, at: dueTime)
                return .none
            }

            private func schedule(_ input: Input, at due: SchedulerTime) {
                if tracksInFlight { inFlight.append((input, due)) }
                deliveries.schedule(on: scheduler, after: due) { self.deliver(input) }
            }

            /// The values in flight and the time each has left, for a checkpoint (`nil` once ended).
            fileprivate func checkpoint(_ codec: StateCodec<Input>) -> Value.Object? {
                let now = scheduler.now.nanoseconds
                var fields: Value.Object
                switch state {
                case .subscribed:
                    fields = [:]
                case .pendingTerminal:
                    // Only a finish is carried over: a failure ends the pipeline anyway.
                    guard let finishingAt else { return nil }
                    fields = ["finishing": .int(Swift.max(0, finishingAt.nanoseconds - now))]
                case .awaitingSubscription, .terminal:
                    return nil
                }
                fields["inFlight"] = .array(inFlight.map { .array([codec.encode($0.value), .int(Swift.max(0, $0.due.nanoseconds - now))]) })
                return fields
            }

            private func deliver(_ input: Input) {
                if tracksInFlight, !inFlight.isEmpty { inFlight.removeFirst() }
                guard state.subscription != nil else { return }
                let more = downstream.receive(input)
                if more > 0 { state.subscription?.request(more) }
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard case .subscribed(let subscription) = state else { return }
                finish(completion, subscription, at: dueTime)
            }

            /// Delivers `completion` at `time`, after the values in flight.
            private func finish(_ completion: Subscribers.Completion<Failure>, _ subscription: any Subscription, at time: SchedulerTime) {
                state = .pendingTerminal(subscription)
                if tracksInFlight, case .finished = completion { finishingAt = time }
                deliveries.schedule(on: scheduler, after: time) {
                    guard case .pendingTerminal = self.state else { return }
                    self.state = .terminal
                    self.finishingAt = nil
                    self.downstream.receive(completion: completion)
                }
            }

            func request(_ demand: Subscribers.Demand) {
                guard case .subscribed(let subscription) = state else { return }
                let wanted = demand.less(owed: &owed)
                if wanted > 0 { subscription.request(wanted) }
            }

            func cancel() {
                switch state {
                case .subscribed(let subscription):
                    state = .terminal
                    deliveries.cancelAll()
                    inFlight.removeAll()
                    subscription.cancel()
                case .pendingTerminal:
                    state = .terminal
                    deliveries.cancelAll()
                case .awaitingSubscription, .terminal:
                    break
                }
            }
        }
    }
}

extension Publisher {
    /// Delivers every value and the completion `interval` later on `scheduler`.
    public func delay<S: Scheduler>(for interval: Duration, scheduler: S) -> Publishers.Delay<Self, S> {
        Publishers.Delay(upstream: self, interval: interval, scheduler: scheduler)
    }
}
