import HubValue

extension Publishers {
    /// Emits at most one value per `interval`, the first or the latest received, as Combine's
    /// `Publishers.Throttle`.
    ///
    /// Demand: it requests `.unlimited` upstream before handing its subscription
    /// downstream (as OpenCombine does). A value that arrives while the
    /// downstream has no demand is dropped. The first value after a quiet period
    /// is scheduled at once (through the scheduler); a value that arrives less than
    /// `interval` after the last emission is scheduled at that emission plus
    /// `interval`, and values arriving meanwhile replace it (`latest: true`) or are
    /// dropped (`latest: false`). A completion that arrives while a value is
    /// scheduled is delivered right after it; otherwise it goes through the
    /// scheduler at once. Cancel cancels the scheduled emission and the upstream.
    ///
    /// With a `state`, the scheduled value, the time left until it goes out and the time
    /// since the last emission are checkpointed: a subscription restores them.
    public struct Throttle<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are throttled.
        public let upstream: Upstream
        /// The minimum interval between emissions.
        public let interval: Duration
        /// The scheduler that times and delivers the emissions.
        public let scheduler: Context
        /// Whether the latest value of a window is emitted (else the first).
        public let latest: Bool

        /// Where the scheduled value is checkpointed, if it is.
        public let state: OperatorState<Output>?

        /// A throttle of `upstream` to one value per `interval` on `scheduler`, checkpointed
        /// in `state` if given.
        public init(upstream: Upstream, interval: Duration, scheduler: Context, latest: Bool, state: OperatorState<Output>? = nil) {
            self.upstream = upstream
            self.interval = interval
            self.scheduler = scheduler
            self.latest = latest
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, interval: interval, scheduler: scheduler, latest: latest)
            if let state {
                let codec = state.codec
                state.restore("throttle") { snapshot throws(CheckpointError) in
                    let pending = try snapshot.field("pending", codec.optional)
                    let remaining = Duration.nanoseconds(Swift.max(0, try snapshot.int("remaining")))
                    let sinceLast = try snapshot.field("sinceLast", StateCodec<Int>.int.optional)
                    inner.restored = (pending, remaining, sinceLast.map { .nanoseconds($0) })
                }
                state.attach("throttle") { [weak inner] in inner?.checkpoint(codec) }
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
            }

            private let downstream: Downstream
            private let interval: Duration
            private let scheduler: Context
            private let latest: Bool
            private var state = State.awaitingSubscription
            private var lastEmissionTime: SchedulerTime?
            private var pendingInput: Input?
            private var pendingCompletion: Subscribers.Completion<Failure>?
            private var demand = Subscribers.Demand.none
            private let emissions = ScheduledActions()
            /// When the scheduled value goes out.
            private var emissionTime: SchedulerTime?
            /// What a checkpoint held: the scheduled value and its time left, the time since the last emission.
            fileprivate var restored: (pending: Input?, remaining: Duration, sinceLast: Duration?)?
            /// Downstream demand the restored scheduled value took already: taken off the next requests.
            private var owed = 0

            init(downstream: Downstream, interval: Duration, scheduler: Context, latest: Bool) {
                self.downstream = downstream
                self.interval = interval
                self.scheduler = scheduler
                self.latest = latest
            }

            private var hasScheduledOutput: Bool { pendingInput != nil || pendingCompletion != nil }

            func receive(subscription: any Subscription) {
                guard case .awaitingSubscription = state else {
                    subscription.cancel()
                    return
                }
                state = .subscribed(subscription)
                if let restored = restored.take() {
                    lastEmissionTime = restored.sinceLast.map { scheduler.now.advanced(by: .zero - $0) }
                    if let pending = restored.pending {
                        owed = 1
                        pendingInput = pending
                        let time = scheduler.now.advanced(by: restored.remaining)
                        emissionTime = time
                        emissions.schedule(on: scheduler, after: time) { self.emit() }
                    }
                }
                subscription.request(.unlimited)
                downstream.receive(subscription: self)
            }

            /// The scheduled value, its time left and the time since the last emission, for a
            /// checkpoint (`nil` once it has ended).
            fileprivate func checkpoint(_ codec: StateCodec<Input>) -> Value.Object? {
                guard case .subscribed = state else { return nil }
                let now = scheduler.now.nanoseconds
                let remaining = emissionTime.map { Swift.max(0, $0.nanoseconds - now) } ?? 0
                return [
                    "pending": codec.optional.encode(pendingInput),
                    "remaining": .int(remaining),
                    "sinceLast": lastEmissionTime.map { .object(["some": .int(now - $0.nanoseconds)]) } ?? .object([:]),
                ]
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard case .subscribed = state else { return .none }
                let now = scheduler.now
                guard demand > 0 else { return .none }
                if hasScheduledOutput {
                    if latest { pendingInput = input }
                    return .none
                }
                let earliest = lastEmissionTime.map { $0.advanced(by: interval) }
                let emissionTime = earliest.map { Swift.max(now, $0) } ?? now
                demand -= 1
                pendingInput = input
                self.emissionTime = emissionTime
                emissions.schedule(on: scheduler, after: emissionTime) { self.emit() }
                return .none
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard case .subscribed(let subscription) = state else { return }
                state = .pendingTerminal(subscription)
                if !hasScheduledOutput {
                    pendingCompletion = completion
                    emissions.schedule(on: scheduler, after: scheduler.now) { self.emit() }
                } else if pendingCompletion == nil {
                    pendingCompletion = completion
                }
            }

            private func emit() {
                switch state {
                case .awaitingSubscription, .terminal: return
                case .subscribed, .pendingTerminal: break
                }
                if pendingInput != nil, pendingCompletion == nil { lastEmissionTime = scheduler.now }
                emissionTime = nil
                let input = pendingInput.take()
                let completion = pendingCompletion.take()
                var more = Subscribers.Demand.none
                if let input { more = downstream.receive(input) }
                if let completion {
                    // A cancel from inside the value's delivery suppresses the completion.
                    guard case .pendingTerminal = state else { return }
                    state = .terminal
                    downstream.receive(completion: completion)
                    return
                }
                if more > 0, case .subscribed = state { demand += more }
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, case .subscribed = state else { return }
                self.demand += demand.less(owed: &owed)
            }

            func cancel() {
                let subscription: (any Subscription)?
                switch state {
                case .subscribed(let s), .pendingTerminal(let s): subscription = s
                case .awaitingSubscription, .terminal: subscription = nil
                }
                state = .terminal
                pendingInput = nil
                pendingCompletion = nil
                emissions.cancelAll()
                subscription?.cancel()
            }
        }
    }
}

extension Publisher {
    /// Emits at most one value per `interval` on `scheduler`: the latest of each window if `latest`, else the first.
    public func throttle<S: Scheduler>(for interval: Duration, scheduler: S, latest: Bool) -> Publishers.Throttle<Self, S> {
        Publishers.Throttle(upstream: self, interval: interval, scheduler: scheduler, latest: latest)
    }
}
