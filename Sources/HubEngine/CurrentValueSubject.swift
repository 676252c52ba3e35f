/// A subject that holds a current value and delivers it to each new subscriber
/// on its first demand, as Combine's `CurrentValueSubject`.
///
/// A subscriber without demand when a value is sent keeps only the newest
/// value pending, delivered on its next request.
public final class CurrentValueSubject<Output, Failure: Error>: Subject {
    @usableFromInline internal let conduits = ConduitList<Output, Failure>()
    @exclusivity(unchecked) @usableFromInline internal var completion: Subscribers.Completion<Failure>?
    @usableFromInline internal var upstreams: [any Subscription] = []
    @exclusivity(unchecked) @usableFromInline internal var current: Output

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
        let conduit = SubjectConduit(
            subscriber, currentValue: { [unowned self] in self.current }, detach: { self.conduits.remove($0) })
        conduits.append(conduit)
        subscriber.receive(subscription: conduit)
    }

    /// Sends `value` to the subscribers that have demand for it.
    @inlinable
    public func send(_ value: Output) {
        guard completion == nil else { return }
        current = value
        conduits.offer(value, resetCurrentWhenUndelivered: true)
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
