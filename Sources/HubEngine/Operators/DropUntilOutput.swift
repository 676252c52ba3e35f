extension Publishers {
    /// Ignores the upstream's values until a second publisher emits, as Combine's
    /// `Publishers.DropUntilOutput`.
    ///
    /// The downstream's demand passes straight to the upstream, and values
    /// dropped before the trigger use it up (as in Combine). The trigger is
    /// asked for `.max(1)`; its first value opens the gate (and its
    /// subscription is then cancelled). If the trigger completes before
    /// emitting, that completion (finished or failure) ends the stream and the
    /// upstream is cancelled. An upstream completion is forwarded and cancels
    /// the trigger.
    public struct DropUntilOutput<Upstream: Publisher, Other: Publisher>: Publisher
    where Upstream.Failure == Other.Failure {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are republished once triggered.
        public let upstream: Upstream
        /// The trigger: its first value lets the upstream's values through.
        public let other: Other

        /// Drops `upstream`'s values until `other` emits.
        public init(upstream: Upstream, other: Other) {
            self.upstream = upstream
            self.other = other
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber)
            subscriber.receive(subscription: inner)
            other.receive(subscriber: inner.makeTrigger())
            upstream.receive(subscriber: inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, TriggerOwner
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias TriggerFailure = Failure

            private var downstream: Downstream?
            private var upstreamSubscription: (any Subscription)?
            private var trigger: TriggerSubscriber<Other.Output, Inner>?
            private var isTriggered = false
            /// Demand requested before the upstream subscribed.
            private var pendingDemand = Subscribers.Demand.none

            init(downstream: Downstream) {
                self.downstream = downstream
            }

            func makeTrigger() -> TriggerSubscriber<Other.Output, Inner> {
                let trigger = TriggerSubscriber<Other.Output, Inner>(owner: self)
                self.trigger = trigger
                return trigger
            }

            func receive(subscription: any Subscription) {
                guard downstream != nil, upstreamSubscription == nil else {
                    subscription.cancel()
                    return
                }
                upstreamSubscription = subscription
                let demand = pendingDemand
                pendingDemand = .none
                if demand > 0 { subscription.request(demand) }
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard isTriggered, let downstream else { return .none }
                return downstream.receive(input)
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard let downstream = downstream.take() else { return }
                upstreamSubscription = nil
                trigger.take()?.cancel()
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard downstream != nil, demand > 0 else { return }
                if let upstreamSubscription {
                    upstreamSubscription.request(demand)
                } else {
                    pendingDemand += demand
                }
            }

            func cancel() {
                guard downstream.take() != nil else { return }
                upstreamSubscription.take()?.cancel()
                trigger.take()?.cancel()
            }

            // MARK: TriggerOwner

            var wantsTrigger: Bool { downstream != nil }

            func triggerFired() {
                trigger = nil
                isTriggered = true
            }

            func triggerCompleted(_ completion: Subscribers.Completion<Failure>) {
                trigger = nil
                guard let downstream = downstream.take() else { return }
                upstreamSubscription.take()?.cancel()
                downstream.receive(completion: completion)
            }
        }
    }
}

extension Publisher {
    /// Ignores this publisher's values until `publisher` emits a value.
    ///
    /// - Parameter publisher: The trigger; a completion from it before any value ends the stream.
    public func drop<Other: Publisher>(untilOutputFrom publisher: Other) -> Publishers.DropUntilOutput<Self, Other>
    where Other.Failure == Failure {
        Publishers.DropUntilOutput(upstream: self, other: publisher)
    }
}
