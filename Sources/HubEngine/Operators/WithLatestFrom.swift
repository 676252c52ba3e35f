import HubValue

extension Publishers {
    /// Pairs each value of its upstream with the latest value of `other`, as ReactiveX's
    /// `withLatestFrom` (Combine has no such operator):
    ///
    /// - `other` is subscribed first and read with `.unlimited` demand; only its latest value
    ///   is kept. It never causes an output by itself.
    /// - An upstream value emits `transform(value, latest)`; one that comes before `other` has
    ///   emitted is dropped, and one more value is requested upstream in its place.
    /// - Demand: the downstream's requests go to the upstream unchanged.
    /// - Completion: the upstream's completion ends it (`other` is cancelled); `other` finishing
    ///   only freezes its latest value. A failure of either fails it and cancels the other.
    /// - With a `state`, `other`'s latest value is checkpointed and restored.
    public struct WithLatestFrom<Upstream: Publisher, Other: Publisher, Output>: Publisher
    where Upstream.Failure == Other.Failure {
        public typealias Failure = Upstream.Failure

        /// The publisher whose values are emitted.
        public let upstream: Upstream
        /// The publisher whose latest value goes with each.
        public let other: Other
        /// Combines an upstream value with `other`'s latest.
        public let transform: (Upstream.Output, Other.Output) -> Output

        /// Where `other`'s latest value is checkpointed, if it is.
        public let state: OperatorState<Other.Output>?

        /// Pairs `upstream`'s values with `other`'s latest through `transform`, the latest
        /// checkpointed in `state` if given.
        public init(
            upstream: Upstream, other: Other, transform: @escaping (Upstream.Output, Other.Output) -> Output,
            state: OperatorState<Other.Output>? = nil
        ) {
            self.upstream = upstream
            self.other = other
            self.transform = transform
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, transform: transform)
            if let state {
                let codec = state.codec.optional
                state.restore("withLatestFrom") { snapshot throws(CheckpointError) in inner.latest = try snapshot.field("latest", codec) }
                state.attach("withLatestFrom") { [weak inner] in
                    guard let inner, inner.isActive else { return nil }
                    return ["latest": codec.encode(inner.latest)]
                }
            }
            subscriber.receive(subscription: inner)
            guard inner.isActive else { return }
            other.receive(subscriber: OtherSide(inner: inner))
            guard inner.isActive else { return }
            upstream.receive(subscriber: inner)
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output

            private var downstream: Downstream?
            private let transform: (Upstream.Output, Other.Output) -> Output
            private var subscription: (any Subscription)?
            private var otherSubscription: (any Subscription)?
            private var upstreamDone = false
            private var otherDone = false
            /// Requested before the upstream's subscription arrived.
            private var pendingDemand = Subscribers.Demand.none
            fileprivate var latest: Other.Output?

            init(downstream: Downstream, transform: @escaping (Upstream.Output, Other.Output) -> Output) {
                self.downstream = downstream
                self.transform = transform
            }

            var isActive: Bool { downstream != nil }

            // MARK: upstream

            func receive(subscription: any Subscription) {
                guard downstream != nil, self.subscription == nil, !upstreamDone else {
                    subscription.cancel()
                    return
                }
                self.subscription = subscription
                if pendingDemand > 0 {
                    let demand = pendingDemand
                    pendingDemand = .none
                    subscription.request(demand)
                }
            }

            func receive(_ input: Upstream.Output) -> Subscribers.Demand {
                guard let downstream, !upstreamDone else { return .none }
                guard let latest else { return .max(1) }
                return downstream.receive(transform(input, latest))
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard !upstreamDone else { return }
                upstreamDone = true
                subscription = nil
                finish(completion)
            }

            // MARK: other

            fileprivate func otherReceive(subscription: any Subscription) {
                guard downstream != nil, otherSubscription == nil, !otherDone else {
                    subscription.cancel()
                    return
                }
                otherSubscription = subscription
                subscription.request(.unlimited)
            }

            fileprivate func otherReceive(_ input: Other.Output) {
                guard downstream != nil, !otherDone else { return }
                latest = input
            }

            fileprivate func otherReceive(completion: Subscribers.Completion<Failure>) {
                guard !otherDone else { return }
                otherDone = true
                otherSubscription = nil
                if case .failure = completion { finish(completion) }
            }

            // MARK: downstream

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, downstream != nil else { return }
                if let subscription { subscription.request(demand) } else { pendingDemand += demand }
            }

            func cancel() {
                guard downstream.take() != nil else { return }
                subscription.take()?.cancel()
                otherSubscription.take()?.cancel()
            }

            private func finish(_ completion: Subscribers.Completion<Failure>) {
                guard let downstream = downstream.take() else { return }
                subscription.take()?.cancel()
                otherSubscription.take()?.cancel()
                upstreamDone = true
                otherDone = true
                latest = nil
                downstream.receive(completion: completion)
            }
        }

        private struct OtherSide<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Other.Output
            typealias Failure = Other.Failure

            let inner: Inner<Downstream>
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { inner.otherReceive(subscription: subscription) }
            func receive(_ input: Input) -> Subscribers.Demand {
                inner.otherReceive(input)
                return .none
            }
            func receive(completion: Subscribers.Completion<Failure>) { inner.otherReceive(completion: completion) }
        }
    }
}

extension Publisher {
    /// Pairs each value with the latest value of `other`; see ``Publishers/WithLatestFrom``.
    public func withLatestFrom<Other: Publisher>(_ other: Other) -> Publishers.WithLatestFrom<Self, Other, (Output, Other.Output)>
    where Other.Failure == Failure {
        Publishers.WithLatestFrom(upstream: self, other: other) { ($0, $1) }
    }

    /// Combines each value with the latest value of `other` through `transform`; see
    /// ``Publishers/WithLatestFrom``.
    public func withLatestFrom<Other: Publisher, Result>(
        _ other: Other, _ transform: @escaping (Output, Other.Output) -> Result
    ) -> Publishers.WithLatestFrom<Self, Other, Result> where Other.Failure == Failure {
        Publishers.WithLatestFrom(upstream: self, other: other, transform: transform)
    }
}
