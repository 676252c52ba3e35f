import HubEngine
import HubValue
import HubWire

/// The input of one group of ``KeyedGroups``: the values of its key, delivered within the
/// demand of the group's pipeline, what it does not ask for yet queued (up to `limit`).
final class GroupInput: Publisher, Subscription {
    typealias Output = Value
    typealias Failure = HubError

    private let limit: Int
    private var subscriber: AnySubscriber<Value, HubError>?
    private var demand = Subscribers.Demand.none
    private(set) var queue: [Value]
    private var finished = false
    private var delivering = false
    /// Set when more than `limit` values waited.
    private(set) var overflowed: HubError?

    init(limit: Int, queued: [Value]) {
        self.limit = limit
        queue = queued
    }

    func receive<S: Subscriber>(subscriber: S) where S.Input == Value, S.Failure == HubError {
        guard self.subscriber == nil else {
            subscriber.receive(subscription: Subscriptions.empty)
            subscriber.receive(completion: .finished)
            return
        }
        self.subscriber = AnySubscriber(subscriber)
        subscriber.receive(subscription: self)
    }

    func send(_ value: Value) {
        guard !finished else { return }
        // Nothing waiting and demand for it: straight to the group's pipeline.
        if queue.isEmpty, demand > 0, !delivering, let subscriber {
            demand -= 1
            delivering = true
            demand += subscriber.receive(value)
            delivering = false
            pump()
            return
        }
        queue.append(value)
        if queue.count > limit { overflowed = HubError(.overflow, "groupBy: a group's pipeline left \(limit) values waiting") }
        pump()
    }

    func finish() {
        guard !finished else { return }
        finished = true
        pump()
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0 else { return }
        self.demand += demand
        pump()
    }

    func cancel() {
        subscriber = nil
        queue = []
    }

    private func pump() {
        guard !delivering else { return }
        delivering = true
        defer { delivering = false }
        while demand > 0, !queue.isEmpty, let subscriber {
            demand -= 1
            demand += subscriber.receive(queue.removeFirst())
        }
        if finished, queue.isEmpty, let subscriber = subscriber.take() {
            subscriber.receive(completion: .finished)
        }
    }
}
