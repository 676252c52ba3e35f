import HubEngine

/// A publisher under the test's control that records the demand its subscriber requests,
/// the cancellations it receives, and lets the test emit values and completions at will.
///
/// Use it as the upstream of an operator to check what demand the operator
/// propagates, that it cancels upstream, and how it reacts to each event.
public final class DemandProbe<Output, Failure: Error>: Publisher {
    /// Every `request` call, in order.
    public private(set) var requests: [Subscribers.Demand] = []
    /// How many times the subscription was cancelled.
    public private(set) var cancellations = 0
    /// How many subscribers have attached.
    public private(set) var subscriptions = 0
    private var downstream: AnySubscriber<Output, Failure>?

    /// A probe with no subscriber yet.
    public init() {}

    /// The total demand requested so far.
    public var totalDemand: Subscribers.Demand { requests.reduce(.none, +) }

    /// Attaches `subscriber` and hands it the probe's subscription.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        subscriptions += 1
        downstream = AnySubscriber(subscriber)
        subscriber.receive(subscription: Link(probe: self))
    }

    /// Sends a value downstream (whatever the demand: the test decides) and returns the demand it answered.
    @discardableResult
    public func send(_ value: Output) -> Subscribers.Demand {
        downstream?.receive(value) ?? .none
    }

    /// Sends a completion downstream.
    public func send(completion: Subscribers.Completion<Failure>) {
        downstream?.receive(completion: completion)
    }

    private final class Link: Subscription {
        let probe: DemandProbe
        init(probe: DemandProbe) { self.probe = probe }
        func request(_ demand: Subscribers.Demand) { probe.requests.append(demand) }
        func cancel() { probe.cancellations += 1 }
    }
}
