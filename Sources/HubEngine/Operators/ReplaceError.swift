extension Publishers {
    /// Replaces a failure with one value followed by `.finished`, as Combine's `Publishers.ReplaceError`.
    ///
    /// Demand passes through. The replacement value needs demand: when the upstream fails
    /// while the downstream has no outstanding demand, the value and `.finished` are held
    /// until the downstream requests something.
    public struct ReplaceError<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Never

        /// The value sent in place of a failure.
        public let output: Upstream.Output
        /// The publisher whose failure is replaced.
        public let upstream: Upstream

        /// `upstream`, with a failure replaced by `output`.
        public init(upstream: Upstream, output: Output) {
            self.upstream = upstream
            self.output = output
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber, output: output))
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Upstream.Output, Downstream.Failure == Never {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private let downstream: Downstream
            private var output: Output?
            private var upstream: (any Subscription)?
            private var subscribed = false
            private var pendingDemand = Subscribers.Demand.none
            private var failedWithoutDemand = false
            private var terminated = false

            init(downstream: Downstream, output: Output) {
                self.downstream = downstream
                self.output = output
            }

            func receive(subscription: any Subscription) {
                guard !subscribed else {
                    subscription.cancel()
                    return
                }
                subscribed = true
                upstream = subscription
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard upstream != nil else { return .none }
                pendingDemand -= 1
                let more = downstream.receive(input)
                guard upstream != nil else { return .none }
                pendingDemand += more
                return more
            }

            func receive(completion: Subscribers.Completion<Upstream.Failure>) {
                guard upstream != nil else { return }
                upstream = nil
                switch completion {
                case .finished:
                    terminated = true
                    downstream.receive(completion: .finished)
                case .failure:
                    if pendingDemand > 0 {
                        deliver()
                    } else {
                        failedWithoutDemand = true
                    }
                }
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, !terminated else { return }
                if failedWithoutDemand {
                    deliver()
                    return
                }
                pendingDemand += demand
                upstream?.request(demand)
            }

            func cancel() {
                terminated = true
                output = nil
                upstream.take()?.cancel()
            }

            private func deliver() {
                guard !terminated else { return }
                terminated = true
                if let value = output.take() { _ = downstream.receive(value) }
                downstream.receive(completion: .finished)
            }
        }
    }
}

extension Publisher {
    /// Replaces a failure with `output` followed by `.finished`.
    public func replaceError(with output: Output) -> Publishers.ReplaceError<Self> {
        Publishers.ReplaceError(upstream: self, output: output)
    }
}
