import HubEngine

/// A subscriber that records its event history and lets a test grant demand step by step.
///
/// - `initialDemand` is requested on `receive(subscription:)` (none by default);
/// - `demandPerValue` is returned from each `receive(_:)` (or `onValue` decides);
/// - `request(_:)` and `cancel()` act on the subscription like a real downstream.
public final class RecordingSubscriber<Input: Equatable, Failure: Error & Equatable>: Subscriber, Cancellable {
    /// One recorded event.
    public typealias Event = RecordedEvent<Input, Failure>

    /// Every event received, in order.
    public private(set) var events: [Event] = []
    /// The subscription received, if any.
    public private(set) var subscription: (any Subscription)?
    private let initialDemand: Subscribers.Demand
    /// Returned from each `receive(_:)` unless ``onValue`` is set.
    public var demandPerValue: Subscribers.Demand
    /// Called on each value; its result replaces `demandPerValue` when set.
    public var onValue: ((Input) -> Subscribers.Demand)?
    /// Called after a completion is recorded.
    public var onCompletion: (() -> Void)?
    /// How many subscriptions arrived (more than one is a contract violation upstream).
    public var subscriptionCount = 0

    /// A recorder that requests `initialDemand` when subscribed and answers each value with `demandPerValue`.
    public init(initialDemand: Subscribers.Demand = .none, demandPerValue: Subscribers.Demand = .none) {
        self.initialDemand = initialDemand
        self.demandPerValue = demandPerValue
    }

    /// The values received, in order.
    public var values: [Input] {
        events.compactMap { if case .value(let value) = $0 { return value } else { return nil } }
    }

    /// Whether a completion was received.
    public var isCompleted: Bool {
        events.contains { if case .finished = $0 { return true }; if case .failure = $0 { return true }; return false }
    }

    /// Records the subscription and requests the initial demand.
    public func receive(subscription: any Subscription) {
        subscriptionCount += 1
        self.subscription = subscription
        events.append(.subscription)
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    /// Records the value and answers the demand per value.
    public func receive(_ input: Input) -> Subscribers.Demand {
        events.append(.value(input))
        if let onValue { return onValue(input) }
        return demandPerValue
    }

    /// Records the completion.
    public func receive(completion: Subscribers.Completion<Failure>) {
        switch completion {
        case .finished: events.append(.finished)
        case .failure(let error): events.append(.failure(error))
        }
        onCompletion?()
    }

    /// Requests `demand` from the subscription, as a real downstream would.
    public func request(_ demand: Subscribers.Demand) { subscription?.request(demand) }

    /// Cancels the subscription.
    public func cancel() { subscription?.cancel() }
}

extension Publisher where Output: Equatable, Failure: Equatable {
    /// Subscribes a new recording subscriber and returns it.
    public func record(initialDemand: Subscribers.Demand = .unlimited, demandPerValue: Subscribers.Demand = .none)
        -> RecordingSubscriber<Output, Failure>
    {
        let subscriber = RecordingSubscriber<Output, Failure>(initialDemand: initialDemand, demandPerValue: demandPerValue)
        subscribe(subscriber)
        return subscriber
    }
}
