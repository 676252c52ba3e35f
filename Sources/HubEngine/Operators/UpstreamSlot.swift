import DequeModule

/// The operator that owns several ``UpstreamSlot``s and hears their events by index.
///
/// Combining operators (merge, zip, combineLatest) subscribe one slot per
/// upstream; the slot keeps that upstream's values and subscription, and tells
/// its owner what happened.
internal protocol SlotOwner: AnyObject {
    associatedtype Failure: Error
    /// Upstream `index` handed over its subscription (already stored in the slot).
    func slotSubscribed(_ index: Int)
    /// Upstream `index` sent a value (already stored in the slot); returns the demand given back to it.
    func slotReceivedValue(_ index: Int) -> Subscribers.Demand
    /// Upstream `index` completed (its subscription is already dropped).
    func slot(_ index: Int, completed completion: Subscribers.Completion<Failure>)
}

/// What a combining operator does with a slot whatever the slot's value type.
internal protocol SlotControl: AnyObject {
    /// The upstream's position among the operator's upstreams.
    var index: Int { get }
    /// Whether the slot holds at least one value.
    var hasValue: Bool { get }
    /// Whether the upstream has finished normally.
    var isFinished: Bool { get }
    /// Requests `demand` from the upstream (nothing once it completed or was cancelled).
    func request(_ demand: Subscribers.Demand)
    /// Cancels the upstream subscription, if it is still live.
    func cancel()
    /// Cancels the upstream and drops the owner and every stored value (breaks the reference cycle).
    func release()
}

/// One upstream of a combining operator: a subscriber that stores what its upstream sends
/// and reports to its owner.
///
/// Values are kept in arrival order (`keepsLatestOnly == false`, for merge and
/// zip) or only the most recent one is kept (`keepsLatestOnly == true`, for
/// combineLatest). The slot holds its owner strongly until ``release()``, as
/// a subscription chain is held by its upstream until it ends.
internal final class UpstreamSlot<Input, Owner: SlotOwner>: Subscriber, SlotControl {
    typealias Failure = Owner.Failure

    let index: Int
    private let keepsLatestOnly: Bool
    private var owner: Owner?
    private var subscription: (any Subscription)?
    private(set) var values = Deque<Input>()
    private(set) var isFinished = false

    init(index: Int, owner: Owner, keepsLatestOnly: Bool) {
        self.index = index
        self.owner = owner
        self.keepsLatestOnly = keepsLatestOnly
    }

    var hasValue: Bool { !values.isEmpty }

    /// Puts back the values a checkpoint held (before the upstream is subscribed).
    func restore(_ restored: [Input]) {
        values = Deque(restored)
    }

    /// The oldest stored value, removed. Only call when ``hasValue``.
    func dequeue() -> Input { values.removeFirst() }

    /// The oldest stored value, removed, or `nil`.
    func popFirst() -> Input? { values.popFirst() }

    /// The most recent value, kept. Only call when ``hasValue``.
    var latest: Input { values[values.count - 1] }

    func receive(subscription: any Subscription) {
        guard let owner, self.subscription == nil, !isFinished else {
            subscription.cancel()
            return
        }
        self.subscription = subscription
        owner.slotSubscribed(index)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        guard let owner, !isFinished else { return .none }
        if keepsLatestOnly { values.removeAll(keepingCapacity: true) }
        values.append(input)
        return owner.slotReceivedValue(index)
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        guard let owner, !isFinished else { return }
        subscription = nil
        if case .finished = completion { isFinished = true }
        owner.slot(index, completed: completion)
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0 else { return }
        subscription?.request(demand)
    }

    func cancel() {
        subscription.take()?.cancel()
    }

    func release() {
        cancel()
        owner = nil
        values.removeAll()
    }
}
