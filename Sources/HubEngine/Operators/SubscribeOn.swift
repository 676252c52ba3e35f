extension Publishers {
    /// Performs the subscription, the requests and the cancel through a scheduler, as Combine's
    /// `Publishers.SubscribeOn`.
    ///
    /// Subscribing to the upstream is scheduled with `scheduler.schedule(_:)`; so
    /// is every `request` and the `cancel` that go upstream. Values and completion
    /// come back downstream directly, on whatever context the upstream sends them.
    /// Demand passes through unchanged. After cancel nothing more is delivered.
    public struct SubscribeOn<Upstream: Publisher, Context: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher subscribed to.
        public let upstream: Upstream
        /// The scheduler that performs subscription, requests and cancel.
        public let scheduler: Context

        /// `upstream`, subscribed to on `scheduler`.
        public init(upstream: Upstream, scheduler: Context) {
            self.upstream = upstream
            self.scheduler = scheduler
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, scheduler: scheduler)
            let upstream = self.upstream
            scheduler.schedule { upstream.receive(subscriber: inner) }
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
                return downstream.receive(input)
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard case .subscribed = state else { return }
                state = .terminal
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, case .subscribed(let subscription) = state else { return }
                scheduler.schedule { subscription.request(demand) }
            }

            func cancel() {
                guard case .subscribed(let subscription) = state else { return }
                state = .terminal
                scheduler.schedule { subscription.cancel() }
            }
        }
    }
}

extension Publisher {
    /// Subscribes to this publisher, and sends it requests and cancel, through `scheduler`.
    public func subscribe<S: Scheduler>(on scheduler: S) -> Publishers.SubscribeOn<Self, S> {
        Publishers.SubscribeOn(upstream: self, scheduler: scheduler)
    }
}
