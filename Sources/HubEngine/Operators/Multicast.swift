extension Publishers {
    /// Shares one upstream subscription among many subscribers through a subject, as Combine's
    /// `Publishers.Multicast`.
    ///
    /// Subscribers attach to the subject (created on first use). Nothing flows
    /// until ``connect()``, which subscribes the subject to the upstream; the
    /// subject then asks the upstream for what it asks (`.unlimited` for
    /// ``PassthroughSubject``). Each subscriber's demand is its own, at the subject.
    public final class Multicast<Upstream: Publisher, SubjectType: Subject>: ConnectablePublisher
    where Upstream.Failure == SubjectType.Failure, Upstream.Output == SubjectType.Output {
        /// The values published.
        public typealias Output = Upstream.Output
        /// The error published.
        public typealias Failure = Upstream.Failure

        /// The publisher shared.
        public let upstream: Upstream
        /// Makes the subject, once, on first subscription or connection.
        public let createSubject: () -> SubjectType
        private var subject: SubjectType?

        /// A multicast of `upstream` through the subject `createSubject` makes.
        public init(upstream: Upstream, createSubject: @escaping () -> SubjectType) {
            self.upstream = upstream
            self.createSubject = createSubject
        }

        private var lazySubject: SubjectType {
            if let subject { return subject }
            let created = createSubject()
            subject = created
            return created
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            lazySubject.receive(subscriber: Inner(downstream: subscriber))
        }

        /// Subscribes the subject to the upstream; cancel the result to disconnect.
        public func connect() -> any Cancellable {
            upstream.subscribe(lazySubject)
        }

        /// Relays the subject to one subscriber; after cancel or completion nothing more passes.
        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private var downstream: Downstream?
            private var subscription: (any Subscription)?

            init(downstream: Downstream) { self.downstream = downstream }

            func receive(subscription: any Subscription) {
                guard self.subscription == nil, let downstream else {
                    subscription.cancel()
                    return
                }
                self.subscription = subscription
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard subscription != nil, let downstream else { return .none }
                let more = downstream.receive(input)
                if more > 0 { subscription?.request(more) }
                return .none
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard subscription != nil, let downstream = downstream.take() else { return }
                subscription = nil
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, downstream != nil else { return }
                subscription?.request(demand)
            }

            func cancel() {
                guard downstream.take() != nil else { return }
                subscription.take()?.cancel()
            }
        }
    }
}

extension Publisher {
    /// A connectable publisher that shares this publisher through the subject `createSubject` makes.
    public func multicast<S: Subject>(_ createSubject: @escaping () -> S) -> Publishers.Multicast<Self, S>
    where S.Output == Output, S.Failure == Failure {
        Publishers.Multicast(upstream: self, createSubject: createSubject)
    }

    /// A connectable publisher that shares this publisher through `subject`.
    public func multicast<S: Subject>(subject: S) -> Publishers.Multicast<Self, S>
    where S.Output == Output, S.Failure == Failure {
        multicast { subject }
    }
}
