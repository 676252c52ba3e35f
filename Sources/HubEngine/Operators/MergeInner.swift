/// The one subscription behind every merge publisher (`Merge` … `Merge8`, `MergeMany`).
///
/// Demand follows Combine's `Merge`:
/// - while the downstream's demand is finite, each upstream has at most one
///   value outstanding: it is asked for `.max(1)` when it subscribes, and for
///   one more only when its value has been delivered;
/// - a value that arrives without downstream demand waits in its upstream's
///   slot (at most one per upstream) until the downstream requests more;
///   waiting values are delivered in upstream order;
/// - once the downstream's demand becomes `.unlimited`, every upstream is
///   asked for `.unlimited`.
///
/// It finishes when every upstream has finished and no value waits; it fails
/// as soon as one upstream fails (the others are cancelled). An upstream that
/// finishes while the upstreams are being subscribed (`empty()`, `just(x)`)
/// never finishes the merge by itself: only the last upstream's completion
/// does, once all of them are subscribed.
internal final class MergeInner<Downstream: Subscriber>: CombiningInner<Downstream> {
    typealias Input = Downstream.Input
    typealias Slot = UpstreamSlot<Input, CombiningInner<Downstream>>

    private var slots: [Slot] = []
    private var demand = Subscribers.Demand.none
    private var upstreamsUnlimited = false
    private var emitting = false
    /// Whether every upstream has been attached: until then, the upstreams that
    /// finished are not all the upstreams there are.
    private var allAttached = false

    /// Subscribes a merge for `downstream`; `subscribeAll` calls ``attach(_:)`` once per upstream, in order.
    static func run(_ downstream: Downstream, subscribeAll: (MergeInner) -> Void) {
        let inner = MergeInner(downstream: downstream)
        inner.start {
            subscribeAll(inner)
            inner.allAttached = true
            // A merge of nothing finishes on the first request, as before any upstream could.
            if !inner.slots.isEmpty { inner.finishIfDone() }
        }
    }

    /// Subscribes `upstream` as the next merged upstream.
    func attach<Upstream: Publisher>(_ upstream: Upstream)
    where Upstream.Output == Input, Upstream.Failure == Failure {
        let slot = makeSlot(Input.self, keepsLatestOnly: false)
        if isActive { slots.append(slot) }
        upstream.receive(subscriber: slot)
    }

    override func slotSubscribed(_ index: Int) {
        slots[index].request(demand.isUnlimited ? .unlimited : .max(1))
    }

    override func slotReceivedValue(_ index: Int) -> Subscribers.Demand {
        guard isActive, !emitting, demand > 0, let value = slots[index].popFirst() else { return .none }
        // Nothing else waits while there is demand and no delivery is under way:
        // deliver this value directly. Combine answers it with .max(1) (one more
        // from the same upstream) while the demand is finite.
        demand -= 1
        emitting = true
        let more = downstream?.receive(value) ?? .none
        emitting = false
        demand += more
        drain()
        return isActive && !demand.isUnlimited ? .max(1) : .none
    }

    override func slotFinished(_ index: Int) {
        finishIfDone()
    }

    override func request(_ demand: Subscribers.Demand) {
        guard isActive, demand > 0 else { return }
        self.demand += demand
        drain()
    }

    override func releaseState() {
        slots = []
    }

    /// Delivers waiting values while there is demand (in upstream order, one per upstream
    /// and pass), asks each of those upstreams for one more, then widens every upstream to
    /// `.unlimited` or finishes when due.
    private func drain() {
        guard !emitting else { return }
        emitting = true
        var delivered = true
        while delivered, isActive, demand > 0 {
            delivered = false
            for slot in slots where demand > 0 {
                guard let value = slot.popFirst(), let downstream else { continue }
                delivered = true
                demand -= 1
                demand += downstream.receive(value)
                if !demand.isUnlimited { slot.request(.max(1)) }
            }
        }
        emitting = false
        guard isActive else { return }
        if demand.isUnlimited && !upstreamsUnlimited {
            upstreamsUnlimited = true
            for slot in slots { slot.request(.unlimited) }
        }
        finishIfDone()
    }

    private func finishIfDone() {
        guard isActive, allAttached, !emitting, slots.allSatisfy({ $0.isFinished && !$0.hasValue }) else { return }
        terminate(with: .finished)
    }
}
