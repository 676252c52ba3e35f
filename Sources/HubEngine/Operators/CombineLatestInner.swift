/// The subscription behind `CombineLatest`, `CombineLatest3` and `CombineLatest4`, whatever the arity.
///
/// It follows Combine's documented behaviour: "The combined publisher passes
/// through any requests to all upstream publishers. However, it still obeys
/// the demand-fulfilling rule of only sending the request amount downstream.
/// If the demand isn't unlimited, it drops values from upstream publishers.
/// It implements this by using a buffer size of 1 for each upstream, and holds
/// the most-recent value in each buffer."
/// - A tuple is delivered when a value arrives, every upstream has a latest
///   value and the downstream has demand; without demand the value only
///   replaces its upstream's latest one.
/// - The demand the downstream answers a tuple with is added to its demand
///   and given back to the upstream whose value triggered the tuple.
/// - It finishes when every upstream has finished (one that finishes without
///   ever emitting does not end it early), and fails at once on a failure.
/// - A value sent into an upstream from inside the downstream's `receive(_:)`
///   gives a tuple when the downstream has demand left at that moment (it is
///   delivered right after the running delivery returns); without demand it
///   only replaces its upstream's latest value.
internal final class CombineLatestInner<Downstream: Subscriber>: CombiningInner<Downstream> {
    private var demand = Subscribers.Demand.none
    private var emitting = false
    /// Tuples of values sent from inside the downstream's `receive(_:)` while it had demand:
    /// Combine would deliver them there and then (recursively); they are delivered, in
    /// order, as soon as the running delivery returns. Each has taken its unit of demand.
    /// The demand the downstream answers one of them with goes to the upstream that sent it.
    private var reentrant: [(tuple: Downstream.Input, index: Int)] = []

    override func request(_ demand: Subscribers.Demand) {
        guard isActive, demand > 0 else { return }
        self.demand += demand
        for slot in controls { slot.request(demand) }
    }

    override func slotReceivedValue(_ index: Int) -> Subscribers.Demand {
        guard isActive, demand > 0, controls.allSatisfy({ $0.hasValue }), let combine else { return .none }
        demand -= 1
        if emitting {
            reentrant.append((combine(), index))
            return .none
        }
        emitting = true
        let answer = downstream?.receive(combine()) ?? .none
        demand += answer
        while isActive, !reentrant.isEmpty, let downstream {
            let (tuple, sender) = reentrant.removeFirst()
            let more = downstream.receive(tuple)
            demand += more
            if isActive, more > 0 { controls.first { $0.index == sender }?.request(more) }
        }
        emitting = false
        reentrant.removeAll()
        return isActive ? answer : .none
    }

    override func slotFinished(_ index: Int) {
        guard controls.allSatisfy({ $0.isFinished }) else { return }
        terminate(with: .finished)
    }

    override func releaseState() {
        reentrant.removeAll()
    }
}
