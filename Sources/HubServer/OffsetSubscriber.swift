import HubEngine
import HubRegistry
import HubWire

/// Hands the values of a subject with history to a ``RemoteSubscriber`` with their
/// offsets: the subscriber end of a ``Publishers/HistoryReplay``. Loop-confined.
final class OffsetSubscriber: Subscriber {
    typealias Input = HistoryEntry
    typealias Failure = HubError

    private let remote: RemoteSubscriber

    init(_ remote: RemoteSubscriber) {
        self.remote = remote
    }

    func receive(subscription: any Subscription) {
        remote.receive(subscription: subscription)
    }

    func receive(_ input: HistoryEntry) -> Subscribers.Demand {
        remote.receive(input.value, offset: input.offset)
    }

    func receive(completion: Subscribers.Completion<HubError>) {
        remote.receive(completion: completion)
    }
}
