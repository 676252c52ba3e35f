extension Publishers {
    /// Republishes the upstream's values until a second publisher emits, then finishes,
    /// as Combine's `Publishers.PrefixUntilOutput`.
    ///
    /// The trigger is subscribed first and asked for `.max(1)`; the
    /// downstream's demand passes straight to the upstream. The trigger's first
    /// value cancels the upstream (and the trigger) and finishes the stream; a
    /// completion of the trigger (of any failure type) only stops listening to
    /// it. An upstream completion is forwarded and cancels the trigger.
    public struct PrefixUntilOutput<Upstream: Publisher, Other: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are republished.
        public let upstream: Upstream
        /// The trigger: its first value ends the stream.
        public let other: Other

        /// Republishes `upstream` until `other` emits.
        public init(upstream: Upstream, other: Other) {
            self.upstream = upstream
            self.other = other
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber)
            other.receive(subscriber: inner.makeTrigger())
            upstream.receive(subscriber: inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, TriggerOwner
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias TriggerFailure = Other.Failure

            private var downstream: Downstream?
            private var upstreamSubscription: (any Subscription)?
            private var trigger: TriggerSubscriber<Other.Output, Inner>?
            private var hasSubscribed = false
            private var isTriggered = false

            init(downstream: Downstream) {
                self.downstream = downstream
            }

            func makeTrigger() -> TriggerSubscriber<Other.Output, Inner> {
                let trigger = TriggerSubscriber<Other.Output, Inner>(owner: self)
                self.trigger = trigger
                return trigger
            }

            func receive(subscription: any Subscription) {
                guard !hasSubscribed, let downstream else {
                    subscription.cancel()
                    return
                }
                hasSubscribed = true
                if isTriggered {
                    // The trigger emitted while the upstream was subscribing: the stream is already over.
                    subscription.cancel()
                    self.downstream = nil
                    downstream.receive(subscription: self)
                    downstream.receive(completion: .finished)
                    return
                }
                upstreamSubscription = subscription
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard upstreamSubscription != nil, let downstream else { return .none }
                return downstream.receive(input)
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard upstreamSubscription.take() != nil, let downstream = downstream.take() else { return }
                trigger.take()?.cancel()
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard downstream != nil, demand > 0 else { return }
                upstreamSubscription?.request(demand)
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
                guard hasSubscribed, let downstream = downstream.take() else { return }
                upstreamSubscription.take()?.cancel()
                downstream.receive(completion: .finished)
            }

            func triggerCompleted(_ completion: Subscribers.Completion<Other.Failure>) {
                trigger = nil
            }
        }
    }
}

extension Publisher {
    /// Republishes this publisher's values until `publisher` emits a value, then finishes.
    ///
    /// - Parameter publisher: The trigger; its completion has no effect on the stream.
    public func prefix<Other: Publisher>(untilOutputFrom publisher: Other) -> Publishers.PrefixUntilOutput<Self, Other> {
        Publishers.PrefixUntilOutput(upstream: self, other: publisher)
    }
}
