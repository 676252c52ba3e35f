extension Publishers {
    /// Calls closures when publishing events occur, as Combine's `Publishers.HandleEvents`.
    ///
    /// Events pass through unchanged. `receiveRequest` sees both the demand the downstream
    /// requests through its subscription and the non-zero demand it returns from
    /// `receive(_:)`. After a completion or a cancellation no closure is called again
    /// and nothing more is delivered.
    public struct HandleEvents<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher observed.
        public let upstream: Upstream
        /// Called with the upstream subscription, before the downstream receives its own.
        public var receiveSubscription: ((any Subscription) -> Void)?
        /// Called with each value, before the downstream receives it.
        public var receiveOutput: ((Upstream.Output) -> Void)?
        /// Called with the completion, before the downstream receives it.
        public var receiveCompletion: ((Subscribers.Completion<Upstream.Failure>) -> Void)?
        /// Called when the downstream cancels, before the upstream is cancelled.
        public var receiveCancel: (() -> Void)?
        /// Called with each demand the downstream asks for, before it is passed upstream.
        public var receiveRequest: ((Subscribers.Demand) -> Void)?

        /// An observer of `upstream` with the given closures.
        public init(
            upstream: Upstream,
            receiveSubscription: ((any Subscription) -> Void)? = nil,
            receiveOutput: ((Upstream.Output) -> Void)? = nil,
            receiveCompletion: ((Subscribers.Completion<Upstream.Failure>) -> Void)? = nil,
            receiveCancel: (() -> Void)? = nil,
            receiveRequest: ((Subscribers.Demand) -> Void)? = nil
        ) {
            self.upstream = upstream
            self.receiveSubscription = receiveSubscription
            self.receiveOutput = receiveOutput
            self.receiveCompletion = receiveCompletion
            self.receiveCancel = receiveCancel
            self.receiveRequest = receiveRequest
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(self, downstream: subscriber))
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Upstream.Output, Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private var downstream: Downstream?
            private var upstream: (any Subscription)?
            private var subscribed = false
            private var receiveSubscription: ((any Subscription) -> Void)?
            private var receiveOutput: ((Upstream.Output) -> Void)?
            private var receiveCompletion: ((Subscribers.Completion<Upstream.Failure>) -> Void)?
            private var receiveCancel: (() -> Void)?
            private var receiveRequest: ((Subscribers.Demand) -> Void)?

            init(_ events: HandleEvents, downstream: Downstream) {
                self.downstream = downstream
                receiveSubscription = events.receiveSubscription
                receiveOutput = events.receiveOutput
                receiveCompletion = events.receiveCompletion
                receiveCancel = events.receiveCancel
                receiveRequest = events.receiveRequest
            }

            func receive(subscription: any Subscription) {
                guard !subscribed, let downstream else {
                    subscription.cancel()
                    return
                }
                subscribed = true
                upstream = subscription
                receiveSubscription?(subscription)
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard let downstream else { return .none }
                receiveOutput?(input)
                let more = downstream.receive(input)
                if more > 0, self.downstream != nil { receiveRequest?(more) }
                return more
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard let downstream = downstream.take() else { return }
                let observe = receiveCompletion
                terminate()
                observe?(completion)
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, downstream != nil else { return }
                receiveRequest?(demand)
                guard downstream != nil, let upstream else { return }
                upstream.request(demand)
            }

            func cancel() {
                guard downstream != nil else { return }
                let observe = receiveCancel
                let upstream = self.upstream
                downstream = nil
                terminate()
                observe?()
                upstream?.cancel()
            }

            /// Drops the closures and the upstream: nothing is observed after a terminal event.
            private func terminate() {
                receiveSubscription = nil
                receiveOutput = nil
                receiveCompletion = nil
                receiveCancel = nil
                receiveRequest = nil
                upstream = nil
            }
        }
    }
}

extension Publisher {
    /// Calls the given closures when this publisher's events occur; events pass through unchanged.
    public func handleEvents(
        receiveSubscription: ((any Subscription) -> Void)? = nil,
        receiveOutput: ((Output) -> Void)? = nil,
        receiveCompletion: ((Subscribers.Completion<Failure>) -> Void)? = nil,
        receiveCancel: (() -> Void)? = nil,
        receiveRequest: ((Subscribers.Demand) -> Void)? = nil
    ) -> Publishers.HandleEvents<Self> {
        Publishers.HandleEvents(
            upstream: self, receiveSubscription: receiveSubscription, receiveOutput: receiveOutput,
            receiveCompletion: receiveCompletion, receiveCancel: receiveCancel, receiveRequest: receiveRequest)
    }
}
