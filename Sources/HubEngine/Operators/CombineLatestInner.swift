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
internal final class CombineLatestInner<Downstream: Subscriber>: CombiningInner<Downstream> {
    private var demand = Subscribers.Demand.none
    private var emitting = false

    override func request(_ demand: Subscribers.Demand) {
        guard isActive, demand > 0 else { return }
        self.demand += demand
        for slot in controls { slot.request(demand) }
    }

    override func slotReceivedValue(_ index: Int) -> Subscribers.Demand {
        guard isActive, !emitting, demand > 0, controls.allSatisfy({ $0.hasValue }),
              let combine, let downstream else { return .none }
        demand -= 1
        emitting = true
        let more = downstream.receive(combine())
        emitting = false
        demand += more
        return more
    }

    override func slotFinished(_ index: Int) {
        guard controls.allSatisfy({ $0.isFinished }) else { return }
        terminate(with: .finished)
    }
}
