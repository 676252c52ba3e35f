/// The subscribers of a subject, as conduits, with a delivery loop that costs
/// no reference counting per subscriber.
///
/// While values are being offered (`sending > 0`), removals are deferred:
/// a cancelled or finished conduit stays in the list, no longer live, until the
/// outermost delivery ends, so the loop can call each conduit through an
/// unretained reference. Subscribers added during a delivery are appended and
/// do not receive the value being delivered, as with Combine's snapshot.
@usableFromInline
internal final class ConduitList<Output, Failure: Error> {
    @exclusivity(unchecked) @usableFromInline internal var items: ContiguousArray<SubjectConduit<Output, Failure>> = []
    @exclusivity(unchecked) @usableFromInline internal var sending = 0
    @exclusivity(unchecked) @usableFromInline internal var needsCompaction = false

    @inlinable
    internal init() {}

    /// The number of live subscribers.
    internal var liveCount: Int {
        needsCompaction ? items.reduce(0) { $0 + ($1.isLive ? 1 : 0) } : items.count
    }

    @inlinable
    internal func append(_ conduit: SubjectConduit<Output, Failure>) {
        items.append(conduit)
    }

    /// Forgets `conduit`, now or at the end of the current delivery.
    @usableFromInline
    internal func remove(_ conduit: SubjectConduit<Output, Failure>) {
        if sending > 0 {
            needsCompaction = true
        } else if let index = items.firstIndex(where: { $0 === conduit }) {
            items.remove(at: index)
        }
    }

    /// Offers `value` to every subscriber present when the delivery starts.
    /// With `resetCurrentWhenUndelivered`, a subscriber without demand is marked
    /// as missing the current value (CurrentValueSubject).
    @inlinable
    internal func offer(_ value: Output, resetCurrentWhenUndelivered: Bool) {
        sending += 1
        let count = items.count
        var index = 0
        while index < count, index < items.count {
            let conduit = Unmanaged.passUnretained(items[index])
            let delivered = conduit._withUnsafeGuaranteedRef { $0.offer(value) }
            if !delivered, resetCurrentWhenUndelivered {
                conduit._withUnsafeGuaranteedRef { $0.deliveredCurrent = false }
            }
            index += 1
        }
        sending -= 1
        if sending == 0, needsCompaction { compact() }
    }

    /// Delivers `completion` to every subscriber and empties the list.
    @usableFromInline
    internal func finishAll(_ completion: Subscribers.Completion<Failure>) {
        let snapshot = items
        if sending == 0 {
            items = []
        } else {
            needsCompaction = true
        }
        for conduit in snapshot { conduit.finish(completion) }
    }

    @usableFromInline
    internal func compact() {
        needsCompaction = false
        items.removeAll { !$0.isLive }
    }
}
