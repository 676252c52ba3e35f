extension Publishers {
    /// Republishes the values of the newest publisher the upstream produced, cancelling the
    /// previous one, as Combine's `Publishers.SwitchToLatest`.
    ///
    /// The upstream is asked for `.unlimited` publishers. A new inner publisher
    /// is asked at once for the whole downstream demand still outstanding, and
    /// later requests go to it directly. It finishes when the upstream and the
    /// current inner publisher have both finished; a failure of either is
    /// delivered at once and cancels the other.
    public struct SwitchToLatest<NestedPublisher: Publisher, Upstream: Publisher>: Publisher
    where Upstream.Output == NestedPublisher, Upstream.Failure == NestedPublisher.Failure {
        /// The values published.
        public typealias Output = NestedPublisher.Output
        /// The error published.
        public typealias Failure = NestedPublisher.Failure

        /// The publisher of publishers.
        public let upstream: Upstream

        /// Switches to the newest publisher that `upstream` produces.
        public init(upstream: Upstream) { self.upstream = upstream }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let outer = Outer(downstream: subscriber)
            subscriber.receive(subscription: outer)
            upstream.receive(subscriber: outer)
        }

        private final class Outer<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == NestedPublisher.Output, Downstream.Failure == Failure {
            typealias Input = NestedPublisher
            typealias Failure = NestedPublisher.Failure

            /// `nil` once the downstream cancelled or received its completion.
            private var downstream: Downstream?
            private var upstreamSubscription: (any Subscription)?
            private var upstreamFinished = false
            private var innerSubscription: (any Subscription)?
            /// The index of the inner publisher whose events count; older ones are ignored.
            private var currentIndex = 0
            private var awaitingInnerSubscription = false
            private var demand = Subscribers.Demand.none

            init(downstream: Downstream) { self.downstream = downstream }

            func receive(subscription: any Subscription) {
                guard upstreamSubscription == nil, !upstreamFinished, downstream != nil else {
                    subscription.cancel()
                    return
                }
                upstreamSubscription = subscription
                subscription.request(.unlimited)
            }

            func receive(_ input: NestedPublisher) -> Subscribers.Demand {
                guard downstream != nil, !upstreamFinished else { return .none }
                innerSubscription.take()?.cancel()
                currentIndex += 1
                awaitingInnerSubscription = true
                input.receive(subscriber: Side(index: currentIndex, outer: self))
                return .none
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard !upstreamFinished else { return }
                upstreamSubscription = nil
                upstreamFinished = true
                guard downstream != nil else { return }
                switch completion {
                case .finished:
                    if !awaitingInnerSubscription, innerSubscription == nil,
                       let downstream = downstream.take() {
                        downstream.receive(completion: .finished)
                    }
                case .failure:
                    guard let downstream = downstream.take() else { return }
                    innerSubscription.take()?.cancel()
                    downstream.receive(completion: completion)
                }
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, downstream != nil else { return }
                self.demand += demand
                innerSubscription?.request(demand)
            }

            func cancel() {
                guard downstream.take() != nil else { return }
                innerSubscription.take()?.cancel()
                upstreamSubscription.take()?.cancel()
            }

            fileprivate func innerReceive(subscription: any Subscription, index: Int) {
                guard index == currentIndex, downstream != nil, innerSubscription == nil else {
                    subscription.cancel()
                    return
                }
                innerSubscription = subscription
                awaitingInnerSubscription = false
                if demand > 0 { subscription.request(demand) }
            }

            fileprivate func innerReceive(_ input: NestedPublisher.Output, index: Int) -> Subscribers.Demand {
                guard index == currentIndex, let downstream else { return .none }
                demand -= 1
                let more = downstream.receive(input)
                if more > 0 { demand += more }
                return more
            }

            fileprivate func innerReceive(completion: Subscribers.Completion<Failure>, index: Int) {
                guard index == currentIndex, downstream != nil else { return }
                innerSubscription = nil
                awaitingInnerSubscription = false
                switch completion {
                case .finished:
                    if upstreamFinished, let downstream = downstream.take() {
                        downstream.receive(completion: .finished)
                    }
                case .failure:
                    guard let downstream = downstream.take() else { return }
                    upstreamSubscription.take()?.cancel()
                    downstream.receive(completion: completion)
                }
            }
        }

        private struct Side<Downstream: Subscriber>: Subscriber
        where Downstream.Input == NestedPublisher.Output, Downstream.Failure == Failure {
            typealias Input = NestedPublisher.Output
            typealias Failure = NestedPublisher.Failure

            let index: Int
            let outer: Outer<Downstream>
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { outer.innerReceive(subscription: subscription, index: index) }
            func receive(_ input: Input) -> Subscribers.Demand { outer.innerReceive(input, index: index) }
            func receive(completion: Subscribers.Completion<Failure>) { outer.innerReceive(completion: completion, index: index) }
        }
    }
}

extension Publisher where Output: Publisher, Output.Failure == Failure {
    /// Republishes the values of the newest inner publisher, cancelling the previous one.
    public func switchToLatest() -> Publishers.SwitchToLatest<Output, Self> {
        Publishers.SwitchToLatest(upstream: self)
    }
}

extension Publisher where Output: Publisher, Failure == Never {
    /// Switch to latest for an upstream that cannot fail: it takes the inner publishers' failure type.
    public func switchToLatest() -> Publishers.SwitchToLatest<Output, Publishers.SetFailureType<Self, Output.Failure>> {
        Publishers.SwitchToLatest(upstream: setFailureType(to: Output.Failure.self))
    }
}

extension Publisher where Output: Publisher, Failure == Never, Output.Failure == Never {
    /// Switch to latest where neither the upstream nor the inner publishers can fail.
    public func switchToLatest() -> Publishers.SwitchToLatest<Output, Self> {
        Publishers.SwitchToLatest(upstream: self)
    }
}

extension Publisher where Output: Publisher, Output.Failure == Never {
    /// Switch to latest for inner publishers that cannot fail: they take the upstream's failure type.
    public func switchToLatest() -> Publishers.SwitchToLatest<
        Publishers.SetFailureType<Output, Failure>,
        Publishers.Map<Self, Publishers.SetFailureType<Output, Failure>>
    > {
        Publishers.SwitchToLatest(upstream: map { $0.setFailureType(to: Failure.self) })
    }
}
