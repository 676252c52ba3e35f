/// A publisher that code can push values into, as Combine's `Subject`.
public protocol Subject<Output, Failure>: AnyObject, Publisher {
    /// Sends a value to the subscribers that have demand for it.
    func send(_ value: Output)
    /// Sends a completion to every subscriber; the subject sends nothing more afterwards.
    func send(completion: Subscribers.Completion<Failure>)
    /// Gives the subject an upstream subscription (when a publisher is subscribed to it);
    /// the subject requests values from it.
    func send(subscription: any Subscription)
}

extension Subject where Output == Void {
    /// Sends the empty value.
    public func send() { send(()) }
}

/// Forwards a publisher's events into a subject (``Publisher/subscribe(_:)-3fk20``).
internal final class SubjectSubscriber<Downstream: Subject>: Subscriber, Subscription {
    typealias Input = Downstream.Output
    typealias Failure = Downstream.Failure

    private weak var subject: Downstream?
    private var upstream: (any Subscription)?
    private var finished = false

    init(_ subject: Downstream) { self.subject = subject }

    func receive(subscription: any Subscription) {
        guard upstream == nil, !finished, let subject else { subscription.cancel(); return }
        upstream = subscription
        subject.send(subscription: self)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        guard upstream != nil, let subject else { return .none }
        subject.send(input)
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        guard upstream != nil, let subject else { return }
        upstream = nil
        finished = true
        subject.send(completion: completion)
    }

    func request(_ demand: Subscribers.Demand) { upstream?.request(demand) }

    func cancel() {
        finished = true
        upstream.take()?.cancel()
        subject = nil
    }
}
