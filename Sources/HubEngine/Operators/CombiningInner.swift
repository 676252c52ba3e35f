/// The subscription shared by the operators that combine several upstreams
/// (merge, zip, combineLatest): it owns one ``UpstreamSlot`` per upstream and
/// does what they have in common.
///
/// - The upstreams are subscribed first, then the downstream receives this
///   subscription; a completion that happens while the upstreams subscribe is
///   delivered right after the subscription, never before it.
/// - A failure from any upstream is forwarded at once and cancels the others.
/// - `cancel()` cancels every upstream; after a terminal event or a cancel
///   nothing more is delivered.
///
/// Subclasses decide what a value, a finish and a request do.
internal class CombiningInner<Downstream: Subscriber>: SlotOwner, Subscription {
    typealias Failure = Downstream.Failure

    /// The downstream, `nil` once terminated or cancelled.
    final var downstream: Downstream?
    /// Every slot, in upstream order.
    final var controls: [any SlotControl] = []
    /// Builds the downstream's value from the slots (zip and combineLatest; set before ``start(_:)``).
    final var combine: (() -> Downstream.Input)?
    private var isEstablished = false
    private var pendingCompletion: Subscribers.Completion<Failure>?

    init(downstream: Downstream) {
        self.downstream = downstream
    }

    /// Whether the downstream may still receive events.
    final var isActive: Bool { downstream != nil && pendingCompletion == nil }

    /// A new slot for the next upstream. Once the subscription has ended (an earlier
    /// upstream failed while subscribing), the slot is born released: it cancels the
    /// subscription its upstream hands it.
    final func makeSlot<Input>(_: Input.Type, keepsLatestOnly: Bool) -> UpstreamSlot<Input, CombiningInner> {
        let slot = UpstreamSlot<Input, CombiningInner>(index: controls.count, owner: self, keepsLatestOnly: keepsLatestOnly)
        if isActive {
            controls.append(slot)
        } else {
            slot.release()
        }
        return slot
    }

    /// Subscribes the upstreams with `subscribeUpstreams`, then hands this subscription downstream.
    final func start(_ subscribeUpstreams: () -> Void) {
        subscribeUpstreams()
        guard let downstream else { return }
        downstream.receive(subscription: self)
        isEstablished = true
        if let completion = pendingCompletion.take() {
            deliver(completion)
        }
    }

    // MARK: Subclass hooks

    func slotSubscribed(_ index: Int) {}

    func slotReceivedValue(_ index: Int) -> Subscribers.Demand { .none }

    /// Upstream `index` finished normally.
    func slotFinished(_ index: Int) {}

    func request(_ demand: Subscribers.Demand) {}

    /// Drops whatever the subclass keeps beyond the slots (called once, on termination).
    func releaseState() {}

    // MARK: Shared behaviour

    final func slot(_ index: Int, completed completion: Subscribers.Completion<Failure>) {
        guard isActive else { return }
        switch completion {
        case .finished: slotFinished(index)
        case .failure: terminate(with: completion)
        }
    }

    /// Ends the subscription: cancels every upstream still live, then sends `completion` downstream.
    final func terminate(with completion: Subscribers.Completion<Failure>) {
        guard isActive else { return }
        releaseSlots()
        if isEstablished {
            deliver(completion)
        } else {
            pendingCompletion = completion
        }
    }

    final func cancel() {
        guard isActive else { return }
        downstream = nil
        releaseSlots()
    }

    private func deliver(_ completion: Subscribers.Completion<Failure>) {
        downstream.take()?.receive(completion: completion)
    }

    private func releaseSlots() {
        let slots = controls
        controls = []
        combine = nil
        releaseState()
        for slot in slots { slot.release() }
    }
}
