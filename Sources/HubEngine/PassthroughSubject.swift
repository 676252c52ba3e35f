/// A subject that forwards each value to the subscribers that have demand for it, as in Combine.
///
/// It keeps no value: a subscriber whose demand is zero when a value is sent
/// does not receive that value. After a completion, new subscribers receive
/// that completion at once.
///
/// The hot path (`send`, the per-subscriber conduits) is inlinable so that
/// typed chains are specialised in the modules that use them.
public final class PassthroughSubject<Output, Failure: Error>: Subject {
    @usableFromInline internal let conduits = ConduitList<Output, Failure>()
    @exclusivity(unchecked) @usableFromInline internal var completion: Subscribers.Completion<Failure>?
    @usableFromInline internal var upstreams: [any Subscription] = []

    /// A subject with no subscribers.
    public init() {}

    deinit {
        for upstream in upstreams { upstream.cancel() }
    }

    /// The number of live subscribers.
    public var subscriberCount: Int { conduits.liveCount }

    /// Whether the subject has completed.
    public var isCompleted: Bool { completion != nil }

    /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
    @inlinable
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        if let completion {
            subscriber.receive(subscription: Subscriptions.empty)
            subscriber.receive(completion: completion)
            return
        }
        let conduit = SubjectConduit(subscriber, detach: { self.conduits.remove($0) })
        conduits.append(conduit)
        subscriber.receive(subscription: conduit)
    }

    /// Sends `value` to the subscribers that have demand for it.
    @inlinable
    public func send(_ value: Output) {
        guard completion == nil else { return }
        conduits.offer(value, resetCurrentWhenUndelivered: false)
    }

    /// Finishes every subscriber with `completion`; nothing is sent afterwards.
    public func send(completion: Subscribers.Completion<Failure>) {
        guard self.completion == nil else { return }
        self.completion = completion
        upstreams = []
        conduits.finishAll(completion)
    }

    /// Takes an upstream subscription (the subject was subscribed to a publisher) and requests unlimited values from it.
    public func send(subscription: any Subscription) {
        upstreams.append(subscription)
        subscription.request(.unlimited)
    }
}
