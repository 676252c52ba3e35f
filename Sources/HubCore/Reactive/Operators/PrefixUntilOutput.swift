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

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber)
            other.subscribe(Trigger(inner: inner))
            upstream.subscribe(inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output

            private var downstream: Downstream?
            private var upstreamSubscription: (any Subscription)?
            private var triggerSubscription: (any Subscription)?
            private var hasSubscribed = false
            private var isTriggered = false

            init(downstream: Downstream) {
                self.downstream = downstream
            }

            func receive(subscription: any Subscription) {
                guard !hasSubscribed else {
                    subscription.cancel()
                    return
                }
                hasSubscribed = true
                guard let downstream else {
                    subscription.cancel()
                    return
                }
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
                triggerSubscription.take()?.cancel()
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard downstream != nil, demand > 0 else { return }
                upstreamSubscription?.request(demand)
            }

            func cancel() {
                guard downstream.take() != nil else { return }
                upstreamSubscription.take()?.cancel()
                triggerSubscription.take()?.cancel()
            }

            // MARK: Trigger

            func triggerReceive(subscription: any Subscription) {
                guard downstream != nil, triggerSubscription == nil, !isTriggered else {
                    subscription.cancel()
                    return
                }
                triggerSubscription = subscription
                subscription.request(.max(1))
            }

            func triggerReceive() {
                guard downstream != nil, !isTriggered, triggerSubscription != nil else { return }
                isTriggered = true
                triggerSubscription.take()?.cancel()
                guard hasSubscribed, let downstream = downstream.take() else { return }
                upstreamSubscription.take()?.cancel()
                downstream.receive(completion: .finished)
            }

            func triggerCompleted() {
                triggerSubscription = nil
            }
        }

        /// Subscribes to the trigger on behalf of an ``Inner``.
        private struct Trigger<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Other.Output
            typealias Failure = Other.Failure

            let inner: Inner<Downstream>
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { inner.triggerReceive(subscription: subscription) }
            func receive(_ input: Input) -> Subscribers.Demand {
                inner.triggerReceive()
                return .none
            }
            func receive(completion: Subscribers.Completion<Other.Failure>) { inner.triggerCompleted() }
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
