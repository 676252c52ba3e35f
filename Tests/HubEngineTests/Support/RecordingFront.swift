import HubEngine
import HubTesting

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
