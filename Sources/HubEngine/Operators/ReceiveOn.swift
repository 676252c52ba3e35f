extension Publishers {
    /// Delivers the upstream's values and completion through a scheduler, as Combine's
    /// `Publishers.ReceiveOn`.
    ///
    /// Each value and the completion is handed to `scheduler.schedule(_:)`, in order.
    /// The subscription itself is handed downstream at once, and requests and
    /// cancel go upstream at once (as in Combine). Demand passes through: the demand
    /// a value's delivery returns is requested upstream then. After cancel, hops
    /// still queued deliver nothing (they are plain `schedule(_:)` hops, not
    /// cancellable, so they may remain queued as no-ops); a cancel while the
    /// completion is in flight suppresses it.
    public struct ReceiveOn<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose events are moved.
        public let upstream: Upstream
        /// The scheduler that delivers the events.
        public let scheduler: Context

        /// `upstream`'s events, delivered on `scheduler`.
        public init(upstream: Upstream, scheduler: Context) {
            self.upstream = upstream
            self.scheduler = scheduler
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber, scheduler: scheduler))
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
            private let scheduler: Context
            private var state = State.awaitingSubscription

            init(downstream: Downstream, scheduler: Context) {
                self.downstream = downstream
                self.scheduler = scheduler
            }

            func receive(subscription: any Subscription) {
                guard case .awaitingSubscription = state else {
                    subscription.cancel()
                    return
                }
                state = .subscribed(subscription)
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard case .subscribed = state else { return .none }
                scheduler.schedule { self.deliver(input) }
                return .none
            }

            private func deliver(_ input: Input) {
                let subscription: any Subscription
                switch state {
                case .subscribed(let s), .pendingTerminal(let s): subscription = s
                case .awaitingSubscription, .terminal: return
                }
                let more = downstream.receive(input)
                if more > 0 { subscription.request(more) }
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard case .subscribed(let subscription) = state else { return }
                state = .pendingTerminal(subscription)
                scheduler.schedule {
                    guard case .pendingTerminal = self.state else { return }
                    self.state = .terminal
                    self.downstream.receive(completion: completion)
                }
            }

            func request(_ demand: Subscribers.Demand) {
                guard case .subscribed(let subscription) = state else { return }
                subscription.request(demand)
            }

            func cancel() {
                switch state {
                case .subscribed(let subscription):
                    state = .terminal
                    subscription.cancel()
                case .pendingTerminal:
                    state = .terminal
                case .awaitingSubscription, .terminal:
                    break
                }
            }
        }
    }
}

extension Publisher {
    /// Delivers this publisher's values and completion through `scheduler`.
    public func receive<S: Scheduler>(on scheduler: S) -> Publishers.ReceiveOn<Self, S> {
        Publishers.ReceiveOn(upstream: self, scheduler: scheduler)
    }
}
