import HubValue

extension Publishers {
    /// How ``Publishers/CollectByTime`` groups values, as Combine's `Publishers.TimeGroupingStrategy`.
    public enum TimeGroupingStrategy<Context: Scheduler> {
        /// Emits, every `interval` on the scheduler, the values received since the last group.
        case byTime(Context, Duration)
        /// Emits every `interval`, or as soon as `count` values are collected (which restarts the interval).
        case byTimeOrCount(Context, Duration, Int)
    }

    /// Collects upstream values into arrays emitted periodically, or when a count is reached,
    /// as Combine's `Publishers.CollectByTime` (OpenCombine 0.14 has no equivalent; this follows
    /// Apple's documentation).
    ///
    /// A repeating timer starts on subscription. Demand: `.byTime` requests
    /// `.unlimited` upstream on subscription; `.byTimeOrCount` requests
    /// `.max(count × n)` upstream for each downstream request of `.max(n)` (Apple's
    /// documented rule). A tick emits the values collected so far if any and the
    /// downstream has demand; without demand they stay collected and go out at a
    /// later tick (or, for `.byTimeOrCount`, as soon as a full group meets demand).
    /// `.finished` emits what is left (when the downstream has demand, else on its
    /// next request) and then finishes; a failure drops what is collected and is
    /// forwarded at once, as Apple documents. The timer is cancelled on completion and on cancel.
    ///
    /// With a `state`, the values collected and the time left until the next tick are
    /// checkpointed: a subscription restores them and ticks when that time is up, then
    /// every interval.
    public struct CollectByTime<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = [Upstream.Output]
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are collected.
        public let upstream: Upstream
        /// How values are grouped.
        public let strategy: TimeGroupingStrategy<Context>

        /// Where the values collected are checkpointed, if they are.
        public let state: OperatorState<Upstream.Output>?

        /// A collection of `upstream`'s values by `strategy`, checkpointed in `state` if given.
        public init(upstream: Upstream, strategy: TimeGroupingStrategy<Context>, state: OperatorState<Upstream.Output>? = nil) {
            self.upstream = upstream
            self.strategy = strategy
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner: Inner<S>
            switch strategy {
            case .byTime(let scheduler, let interval):
                inner = Inner(downstream: subscriber, scheduler: scheduler, interval: interval, count: nil)
            case .byTimeOrCount(let scheduler, let interval, let count):
                precondition(count > 0, "collect(.byTimeOrCount) needs a positive count")
                inner = Inner(downstream: subscriber, scheduler: scheduler, interval: interval, count: count)
            }
            if let state {
                let codec = state.codec.array
                state.restore("collectByTime") { snapshot throws(CheckpointError) in
                    let collected = try snapshot.field("collected", codec)
                    let remaining = Duration.nanoseconds(Swift.max(0, try snapshot.int("remaining")))
                    inner.restored = (collected, remaining)
                }
                state.attach("collectByTime") { [weak inner] in inner?.checkpoint(codec) }
            }
            upstream.receive(subscriber: inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == [Upstream.Output], Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private enum State {
                case awaitingSubscription
                case subscribed(any Subscription)
                /// The upstream finished; collected values wait for demand.
                case pendingFinish
                case terminal
            }

            private let downstream: Downstream
            private let scheduler: Context
            private let interval: Duration
            /// The group size for `.byTimeOrCount`, `nil` for `.byTime`.
            private let count: Int?
            private var state = State.awaitingSubscription
            private var collected: [Input] = []
            private var demand = Subscribers.Demand.none
            private var timer: (any Cancellable)?
            /// When the timer ticks next.
            private var nextTick: SchedulerTime?
            private var emitting = false
            /// What a checkpoint held: the values collected and the time left until the next tick.
            fileprivate var restored: (collected: [Input], remaining: Duration)?
            /// Upstream demand the restored values took already (`.byTimeOrCount`): taken off the next requests.
            private var owed = 0

            init(downstream: Downstream, scheduler: Context, interval: Duration, count: Int?) {
                self.downstream = downstream
                self.scheduler = scheduler
                self.interval = interval
                self.count = count
            }

            func receive(subscription: any Subscription) {
                guard case .awaitingSubscription = state else {
                    subscription.cancel()
                    return
                }
                state = .subscribed(subscription)
                let restored = self.restored.take()
                if let restored {
                    collected = restored.collected
                    owed = count == nil ? 0 : restored.collected.count
                }
                downstream.receive(subscription: self)
                guard case .subscribed = state else { return }
                startTimer(after: restored?.remaining ?? interval)
                if count == nil { subscription.request(.unlimited) }
            }

            private func startTimer(after first: Duration? = nil) {
                timer.take()?.cancel()
                var ran = false
                let due = scheduler.now.advanced(by: first ?? interval)
                nextTick = due
                let cancellable = scheduler.schedule(after: due, interval: interval) {
                    ran = true
                    self.tick()
                }
                if !ran, case .subscribed = state { timer = cancellable } else if !ran { cancellable.cancel() }
            }

            /// The values collected and the time left until the next tick, for a checkpoint
            /// (`nil` once the upstream has ended).
            fileprivate func checkpoint(_ codec: StateCodec<[Input]>) -> Value.Object? {
                guard case .subscribed = state else { return nil }
                let remaining = nextTick.map { Swift.max(0, $0.nanoseconds - scheduler.now.nanoseconds) } ?? interval.nanosecondsClamped
                return ["collected": codec.encode(collected), "remaining": .int(remaining)]
            }

            private func tick() {
                if let due = nextTick { nextTick = due.advanced(by: interval) }
                guard case .subscribed = state, !collected.isEmpty, demand > 0 else { return }
                emitGroup()
            }

            /// Emits the next group (at most `count` values) and adds the demand its delivery returns.
            private func emitGroup() {
                let group: [Input]
                if let count, collected.count > count {
                    group = Array(collected.prefix(count))
                    collected.removeFirst(count)
                } else {
                    group = collected
                    collected = []
                }
                demand -= 1
                emitting = true
                let more = downstream.receive(group)
                emitting = false
                addDemand(more)
            }

            private func addDemand(_ more: Subscribers.Demand) {
                guard more > 0 else { return }
                demand += more
                if let count, case .subscribed(let subscription) = state { subscription.request(more * count) }
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard case .subscribed = state else { return .none }
                collected.append(input)
                if let count {
                    var emitted = false
                    while collected.count >= count, demand > 0, case .subscribed = state {
                        emitGroup()
                        emitted = true
                    }
                    if emitted, case .subscribed = state { startTimer() }
                }
                return .none
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard case .subscribed = state else { return }
                timer.take()?.cancel()
                switch completion {
                case .failure:
                    state = .terminal
                    collected = []
                    downstream.receive(completion: completion)
                case .finished:
                    state = .pendingFinish
                    flushFinished()
                }
            }

            /// After `.finished`: emits the remaining groups as demand allows, then finishes.
            private func flushFinished() {
                while case .pendingFinish = state, !collected.isEmpty, demand > 0 {
                    emitGroup()
                }
                guard case .pendingFinish = state, collected.isEmpty else { return }
                state = .terminal
                downstream.receive(completion: .finished)
            }

            func request(_ demand: Subscribers.Demand) {
                switch state {
                case .subscribed(let subscription):
                    self.demand += demand
                    if let count {
                        let wanted = (demand * count).less(owed: &owed)
                        if wanted > 0 { subscription.request(wanted) }
                    }
                    guard !emitting, let count else { return }
                    var emitted = false
                    while collected.count >= count, self.demand > 0, case .subscribed = state {
                        emitGroup()
                        emitted = true
                    }
                    if emitted, case .subscribed = state { startTimer() }
                case .pendingFinish:
                    self.demand += demand
                    if !emitting { flushFinished() }
                case .awaitingSubscription, .terminal:
                    break
                }
            }

            func cancel() {
                let subscription: (any Subscription)?
                if case .subscribed(let s) = state { subscription = s } else { subscription = nil }
                if case .terminal = state { return }
                state = .terminal
                collected = []
                timer.take()?.cancel()
                subscription?.cancel()
            }
        }
    }
}

extension Publisher {
    /// Collects values into arrays emitted by `strategy`: every interval, or also when a count is reached.
    public func collect<S: Scheduler>(_ strategy: Publishers.TimeGroupingStrategy<S>) -> Publishers.CollectByTime<Self, S> {
        Publishers.CollectByTime(upstream: self, strategy: strategy)
    }
}
