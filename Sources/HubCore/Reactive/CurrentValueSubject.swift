/// A subject that holds a current value and delivers it to each new subscriber
/// on its first demand, as Combine's `CurrentValueSubject`.
///
/// A subscriber without demand when a value is sent keeps only the newest
/// value pending, delivered on its next request.
public final class CurrentValueSubject<Output, Failure: Error>: Subject {
    private var conduits: ContiguousArray<SubjectConduit<Output, Failure>> = []
    private var completion: Subscribers.Completion<Failure>?
    private var upstreams: [any Subscription] = []
    private var current: Output

    /// A subject whose current value is `value`.
    public init(_ value: Output) {
        current = value
    }

    deinit {
        for upstream in upstreams { upstream.cancel() }
    }

    /// The current value; setting it sends it to the subscribers.
    public var value: Output {
        get { current }
        set { send(newValue) }
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
        current = value
        let snapshot = conduits
        for conduit in snapshot { conduit.offer(value) }
    }

    public func send(completion: Subscribers.Completion<Failure>) {
        guard self.completion == nil else { return }
        self.completion = completion
        let snapshot = conduits
        conduits = []
        upstreams = []
        for conduit in snapshot { conduit.finish(completion) }
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
        private var parent: CurrentValueSubject?
        private var downstream: Downstream?
        private var demand = Subscribers.Demand.none
        private var deliveredCurrent = false

        init(parent: CurrentValueSubject, downstream: Downstream) {
            self.parent = parent
            self.downstream = downstream
        }

        override func offer(_ value: Output) {
            guard demand > 0, let downstream else {
                deliveredCurrent = false
                return
            }
            demand -= 1
            deliveredCurrent = true
            let more = downstream.receive(value)
            if more > 0 { demand += more }
        }

        override func finish(_ completion: Subscribers.Completion<Failure>) {
            guard let downstream = downstream.take() else { return }
            parent = nil
            downstream.receive(completion: completion)
        }

        override func request(_ demand: Subscribers.Demand) {
            guard let downstream, demand > 0 else { return }
            self.demand += demand
            guard !deliveredCurrent, let parent else { return }
            deliveredCurrent = true
            self.demand -= 1
            let more = downstream.receive(parent.current)
            if more > 0 { self.demand += more }
        }

        override func cancel() {
            guard downstream.take() != nil else { return }
            parent.take()?.remove(self)
        }
    }
}
