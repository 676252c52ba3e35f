/// A subject that forwards each value to the subscribers that have demand for it, as in Combine.
///
/// It keeps no value: a subscriber whose demand is zero when a value is sent
/// does not receive that value. After a completion, new subscribers receive
/// that completion at once.
public final class PassthroughSubject<Output, Failure: Error>: Subject {
    private var conduits: ContiguousArray<SubjectConduit<Output, Failure>> = []
    private var completion: Subscribers.Completion<Failure>?
    private var upstreams: [any Subscription] = []

    /// A subject with no subscribers.
    public init() {}

    deinit {
        for upstream in upstreams { upstream.cancel() }
    }

    /// The number of live subscribers.
    public var subscriberCount: Int { conduits.count }

    /// Whether the subject has completed.
    public var isCompleted: Bool { completion != nil }

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        if let completion {
            subscriber.receive(subscription: Subscriptions.empty)
            subscriber.receive(completion: completion)
            return
        }
        let conduit = Conduit(parent: self, downstream: subscriber)
        conduits.append(conduit)
        subscriber.receive(subscription: conduit)
    }

    public func send(_ value: Output) {
        guard completion == nil else { return }
        let current = conduits
        for conduit in current { conduit.offer(value) }
    }

    public func send(completion: Subscribers.Completion<Failure>) {
        guard self.completion == nil else { return }
        self.completion = completion
        let current = conduits
        conduits = []
        upstreams = []
        for conduit in current { conduit.finish(completion) }
    }

    public func send(subscription: any Subscription) {
        upstreams.append(subscription)
        subscription.request(.unlimited)
    }

    fileprivate func remove(_ conduit: SubjectConduit<Output, Failure>) {
        if let index = conduits.firstIndex(where: { $0 === conduit }) {
            conduits.remove(at: index)
        }
    }

    private final class Conduit<Downstream: Subscriber>: SubjectConduit<Output, Failure>
    where Downstream.Input == Output, Downstream.Failure == Failure {
        private var parent: PassthroughSubject?
        private var downstream: Downstream?
        private var demand = Subscribers.Demand.none

        init(parent: PassthroughSubject, downstream: Downstream) {
            self.parent = parent
            self.downstream = downstream
        }

        override func offer(_ value: Output) {
            guard demand > 0, let downstream else { return }
            demand -= 1
            let more = downstream.receive(value)
            if more > 0 { demand += more }
        }

        override func finish(_ completion: Subscribers.Completion<Failure>) {
            guard let downstream = downstream.take() else { return }
            parent = nil
            downstream.receive(completion: completion)
        }

        override func request(_ demand: Subscribers.Demand) {
            guard downstream != nil else { return }
            self.demand += demand
        }

        override func cancel() {
            guard downstream.take() != nil else { return }
            parent.take()?.remove(self)
        }
    }
}
