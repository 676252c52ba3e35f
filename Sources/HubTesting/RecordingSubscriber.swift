import HubCore

/// A HubCore subscriber that records its event history and lets a test grant demand step by step.
///
/// - `initialDemand` is requested on `receive(subscription:)` (none by default);
/// - `demandPerValue` is returned from each `receive(_:)` (or `onValue` decides);
/// - `request(_:)` and `cancel()` act on the subscription like a real downstream.
final class RecordingSubscriber<Input: Equatable, Failure: Error & Equatable>: Subscriber, Cancellable {
    typealias Event = RecordedEvent<Input, Failure>

    private(set) var events: [Event] = []
    private(set) var subscription: (any Subscription)?
    private let initialDemand: Subscribers.Demand
    var demandPerValue: Subscribers.Demand
    /// Called on each value; its result replaces `demandPerValue` when set.
    var onValue: ((Input) -> Subscribers.Demand)?
    var onCompletion: (() -> Void)?
    var subscriptionCount = 0

    init(initialDemand: Subscribers.Demand = .none, demandPerValue: Subscribers.Demand = .none) {
        self.initialDemand = initialDemand
        self.demandPerValue = demandPerValue
    }

    /// The values received, in order.
    var values: [Input] {
        events.compactMap { if case .value(let value) = $0 { return value } else { return nil } }
    }

    /// Whether a completion was received.
    var isCompleted: Bool {
        events.contains { if case .finished = $0 { return true }; if case .failure = $0 { return true }; return false }
    }

    func receive(subscription: any Subscription) {
        subscriptionCount += 1
        self.subscription = subscription
        events.append(.subscription)
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        events.append(.value(input))
        if let onValue { return onValue(input) }
        return demandPerValue
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        switch completion {
        case .finished: events.append(.finished)
        case .failure(let error): events.append(.failure(error))
        }
        onCompletion?()
    }

    func request(_ demand: Subscribers.Demand) { subscription?.request(demand) }

    func cancel() { subscription?.cancel() }
}

extension Publisher where Output: Equatable, Failure: Equatable {
    /// Subscribes a new recording subscriber and returns it.
    func record(initialDemand: Subscribers.Demand = .unlimited, demandPerValue: Subscribers.Demand = .none)
        -> RecordingSubscriber<Output, Failure>
    {
        let subscriber = RecordingSubscriber<Output, Failure>(initialDemand: initialDemand, demandPerValue: demandPerValue)
        subscribe(subscriber)
        return subscriber
    }
}

/// A subscriber that records through a ``RecordingSubscriber`` it keeps and adds only its own
/// twist (a cast failure, arrival times): the recorder's demand controls and subscription are
/// its own.
protocol RecordingFront: AnyObject {
    associatedtype Recorded: Equatable
    /// The recorder that keeps the history and grants the demand.
    var recording: RecordingSubscriber<Recorded, TestError> { get }
}

extension RecordingFront {
    /// The subscription received, if any.
    var subscription: (any Subscription)? { recording.subscription }
    /// Returned from each value unless `onValue` is set.
    var demandPerValue: Subscribers.Demand {
        get { recording.demandPerValue }
        set { recording.demandPerValue = newValue }
    }
    /// Called on each value; its result replaces `demandPerValue` when set.
    var onValue: ((Recorded) -> Subscribers.Demand)? {
        get { recording.onValue }
        set { recording.onValue = newValue }
    }

    func request(_ demand: Subscribers.Demand) { recording.request(demand) }
    func cancel() { recording.cancel() }
}
