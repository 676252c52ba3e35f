extension Publishers {
    /// Replaces an empty stream with one value, as Combine's `Publishers.ReplaceEmpty`.
    ///
    /// Like Combine (and OpenCombine), it requests `.unlimited` from upstream as soon as it
    /// is subscribed, and also forwards the downstream's requests. When the upstream finishes
    /// without a value, `output` and `.finished` are sent once the downstream has requested
    /// something (held until then). Failures pass through.
    public struct ReplaceEmpty<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The value sent when the upstream finishes empty.
        public let output: Upstream.Output
        /// The publisher whose emptiness is replaced.
        public let upstream: Upstream

        /// `upstream`, or `output` when `upstream` finishes without a value.
        public init(upstream: Upstream, output: Output) {
            self.upstream = upstream
            self.output = output
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(downstream: subscriber, output: output))
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Upstream.Output, Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private let downstream: Downstream
            private var output: Output?
            private var upstream: (any Subscription)?
            private var subscribed = false
            private var receivedValue = false
            private var downstreamRequested = false
            private var finishedEmpty = false
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
                upstream?.request(.unlimited)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard upstream != nil else { return .none }
                receivedValue = true
                return downstream.receive(input)
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard upstream != nil else { return }
                upstream = nil
                if case .finished = completion, !receivedValue {
                    finishedEmpty = true
                    if downstreamRequested { deliver() }
                    return
                }
                terminated = true
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, !terminated else { return }
                downstreamRequested = true
                if finishedEmpty {
                    deliver()
                } else {
                    upstream?.request(demand)
                }
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
    /// Sends `output` when the upstream finishes without producing a value.
    public func replaceEmpty(with output: Output) -> Publishers.ReplaceEmpty<Self> {
        Publishers.ReplaceEmpty(upstream: self, output: output)
    }
}
