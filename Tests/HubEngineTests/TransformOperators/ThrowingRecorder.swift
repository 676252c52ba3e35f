import HubEngine
import HubTesting

/// A recording subscriber for the try-variants, whose failure is `any Error`: it records the same
/// ``RecordedEvent`` history as ``RecordingSubscriber`` (it is one, in front of which the error
/// is cast back with ``TestError/recorded(_:)``: an error of another type is recorded as
/// `TestError.other(-1)`).
final class ThrowingRecorder<Input: Equatable>: Subscriber, Cancellable, RecordingFront {
    /// The recorder that keeps the history and grants the demand.
    let recording: RecordingSubscriber<Input, TestError>

    /// The history so far.
    var events: [RecordedEvent<Input, TestError>] { recording.events }

    init(initialDemand: Subscribers.Demand = .unlimited, demandPerValue: Subscribers.Demand = .none) {
        recording = RecordingSubscriber(initialDemand: initialDemand, demandPerValue: demandPerValue)
    }

    /// The values received, in order.
    var values: [Input] { recording.values }

    func receive(subscription: any Subscription) { recording.receive(subscription: subscription) }

    func receive(_ input: Input) -> Subscribers.Demand { recording.receive(input) }

    func receive(completion: Subscribers.Completion<any Error>) {
        recording.receive(completion: completion.mapError(TestError.recorded))
    }
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
