/// The subscription behind `Zip`, `Zip3` and `Zip4`, whatever the arity.
///
/// It follows Combine's (and OpenCombine's) `Zip`:
/// - a downstream request of n is passed to every upstream as n;
/// - a tuple is delivered as soon as every slot holds a value (upstreams only
///   send what was requested, so this never exceeds the downstream's demand);
/// - the demand the downstream answers a tuple with is given back only to the
///   upstream whose value completed the tuple; a request made by the
///   downstream while it handles a tuple reaches that upstream the same way,
///   instead of through `request`;
/// - it finishes when an upstream has finished and none of its values waits,
///   checked when an upstream finishes and after each upstream value.
internal final class ZipInner<Downstream: Subscriber>: CombiningInner<Downstream> {
    /// The upstream whose value is being delivered as part of a tuple.
    private var processingIndex: Int?
    /// Demand for `processingIndex`, answered through its `receive(_:)`.
    private var demandWhileProcessing: Subscribers.Demand?

    override func request(_ demand: Subscribers.Demand) {
        guard isActive, demand > 0 else { return }
        for slot in controls where slot.index != processingIndex {
            slot.request(demand)
        }
        if processingIndex != nil { demandWhileProcessing = demand }
    }

    override func slotReceivedValue(_ index: Int) -> Subscribers.Demand {
        guard isActive, processingIndex == nil else { return .none }
        var answer = Subscribers.Demand.none
        processingIndex = index
        while isActive, controls.allSatisfy({ $0.hasValue }), let combine, let downstream {
            demandWhileProcessing = nil
            let more = downstream.receive(combine())
            if more > 0 { demandWhileProcessing = more }
            answer += demandWhileProcessing ?? .none
        }
        processingIndex = nil
        finishIfExhausted()
        return answer
    }

    override func slotFinished(_ index: Int) {
        guard processingIndex == nil else { return }
        finishIfExhausted()
    }

    /// Finishes when a finished upstream has no value left: no further tuple is possible.
    private func finishIfExhausted() {
        guard isActive, controls.contains(where: { $0.isFinished && !$0.hasValue }) else { return }
        terminate(with: .finished)
    }
}
