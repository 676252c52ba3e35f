import Foundation
import HubClient
import HubEngine
import NetworkTestSupport

/// What the recorders of remote subscriptions share (``Recorder`` of values,
/// ``EntryRecorder`` of entries): the subscriber that keeps its subscription, asks for
/// the demand it is given, records each input and the completion as an event (pushed
/// from the client's loop), and lets the test request more or cancel.
public class RemoteRecorder<Input, Event: Sendable>: Subscriber, @unchecked Sendable {
    public typealias Failure = HubClientError

    /// Every event, in order.
    public let events = EventQueue<Event>()
    /// What it asks for when subscribed.
    public let initialDemand: Subscribers.Demand
    private let lock = NSLock()
    private var subscription: (any Subscription)?
    private let recorded: (Input) -> Event
    private let finished: Event
    private let failed: (HubClientError) -> Event

    /// A recorder that asks for `demand` when subscribed and records an input as
    /// `recorded(input)`, the end as `finished` or `failed(error)`.
    init(
        demand: Subscribers.Demand, recorded: @escaping (Input) -> Event, finished: Event,
        failed: @escaping (HubClientError) -> Event
    ) {
        initialDemand = demand
        self.recorded = recorded
        self.finished = finished
        self.failed = failed
    }

    public func receive(subscription: any Subscription) {
        lock.withLock { self.subscription = subscription }
        if initialDemand != .none { subscription.request(initialDemand) }
    }

    public func receive(_ input: Input) -> Subscribers.Demand {
        events.push(recorded(input))
        return .none
    }

    public func receive(completion: Subscribers.Completion<HubClientError>) {
        switch completion {
        case .finished: events.push(finished)
        case let .failure(error): events.push(failed(error))
        }
    }

    private var current: (any Subscription)? { lock.withLock { subscription } }

    /// Requests more (hops to the client's loop).
    public func request(_ demand: Subscribers.Demand) { current?.request(demand) }

    /// Cancels (hops to the client's loop).
    public func cancel() { current?.cancel() }
}
