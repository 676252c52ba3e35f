extension Publishers {
    /// Connects a connectable publisher on the first subscription and disconnects it when the
    /// last subscriber cancels, as Combine's `Publishers.Autoconnect`.
    ///
    /// Demand passes through to the connectable publisher. A completion does not
    /// disconnect; only cancellations count down the subscribers.
    public class Autoconnect<Upstream: ConnectablePublisher>: Publisher {
        /// The values published.
        public typealias Output = Upstream.Output
        /// The error published.
        public typealias Failure = Upstream.Failure

        private enum State {
            case disconnected
            case connected(subscribers: Int, connection: any Cancellable)
        }

        /// The connectable publisher.
        public final let upstream: Upstream
        private var state = State.disconnected

        /// Autoconnects `upstream`.
        public init(upstream: Upstream) { self.upstream = upstream }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(parent: self, downstream: subscriber)
            switch state {
            case .connected(let subscribers, let connection):
                state = .connected(subscribers: subscribers + 1, connection: connection)
                upstream.receive(subscriber: inner)
            case .disconnected:
                upstream.receive(subscriber: inner)
                let connection = upstream.connect()
                state = .connected(subscribers: 1, connection: connection)
            }
        }

        /// One subscriber cancelled: disconnect if it was the last.
        fileprivate func subscriberCancelled() {
            guard case .connected(let subscribers, let connection) = state else { return }
            if subscribers <= 1 {
                state = .disconnected
                connection.cancel()
            } else {
                state = .connected(subscribers: subscribers - 1, connection: connection)
            }
        }

        /// Relays the upstream to one subscriber and counts its cancellation once.
        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private let parent: Autoconnect
            private let downstream: Downstream
            private var subscription: (any Subscription)?
            private var cancelled = false

            init(parent: Autoconnect, downstream: Downstream) {
                self.parent = parent
                self.downstream = downstream
            }

            func receive(subscription: any Subscription) {
                guard self.subscription == nil, !cancelled else {
                    subscription.cancel()
                    return
                }
                self.subscription = subscription
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                cancelled ? .none : downstream.receive(input)
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard !cancelled else { return }
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard !cancelled else { return }
                subscription?.request(demand)
            }

            func cancel() {
                guard !cancelled else { return }
                cancelled = true
                parent.subscriberCancelled()
                subscription.take()?.cancel()
            }
        }
    }
}
