import HubCore

/// A recording subscriber for the try-variants, whose failure is `any Error`: it records the same
/// ``RecordedEvent`` history as ``RecordingSubscriber``, with the error cast back to ``TestError``
/// (an error of another type is recorded as `TestError.other(-1)`).
final class ThrowingRecorder<Input: Equatable>: Subscriber, Cancellable {
    private(set) var events: [RecordedEvent<Input, TestError>] = []
    private(set) var subscription: (any Subscription)?
    private let initialDemand: Subscribers.Demand
    var demandPerValue: Subscribers.Demand
    /// Called on each value; its result replaces `demandPerValue` when set.
    var onValue: ((Input) -> Subscribers.Demand)?

    init(initialDemand: Subscribers.Demand = .unlimited, demandPerValue: Subscribers.Demand = .none) {
        self.initialDemand = initialDemand
        self.demandPerValue = demandPerValue
    }

    /// The values received, in order.
    var values: [Input] {
        events.compactMap { if case .value(let value) = $0 { return value } else { return nil } }
    }

    func receive(subscription: any Subscription) {
        self.subscription = subscription
        events.append(.subscription)
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        events.append(.value(input))
        if let onValue { return onValue(input) }
        return demandPerValue
    }

    func receive(completion: Subscribers.Completion<any Error>) {
        switch completion {
        case .finished: events.append(.finished)
        case .failure(let error): events.append(.failure(TestError.recorded(error)))
        }
    }

    func request(_ demand: Subscribers.Demand) { subscription?.request(demand) }
    func cancel() { subscription?.cancel() }
}

extension Publisher where Output: Equatable, Failure == any Error {
    /// Subscribes a new throwing recorder and returns it.
    func recordThrowing(initialDemand: Subscribers.Demand = .unlimited, demandPerValue: Subscribers.Demand = .none)
        -> ThrowingRecorder<Output>
    {
        let recorder = ThrowingRecorder<Output>(initialDemand: initialDemand, demandPerValue: demandPerValue)
        subscribe(recorder)
        return recorder
    }
}
