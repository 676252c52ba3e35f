import HubTransport

/// A connection's producer on the hub's loop whose pending bytes go to the connection's
/// loop in one piece per write of the hub's loop, in order with the changes it hands
/// over after them (``HandOffPlace``): a relayed WebSocket session's messages
/// (``RelayedSession``) and a relayed event stream's body (``RelayedHTTPStream``).
/// Confined to the hub's loop.
protocol HandOffPlaceHolder: AnyObject {
    /// The hand-off to the connection's loop.
    var handOff: LoopHandOff { get }
    /// The place of what is pending (the holder's own; only this protocol's methods use it).
    var handOffPlace: HandOffPlace { get set }
    /// Takes what is pending: the work that writes it on the connection's loop, or `nil`
    /// when nothing is pending.
    func takePendingWork() -> (() -> Void)?
}

extension HandOffPlaceHolder {
    /// Counts a message queued for the hub loop's write coalescing, with `pendingBytes`
    /// now pending, and makes sure they go over at the hub loop's next write: now, when
    /// they reach `eagerBytes`; at the end of this pass, from `promptBytes` on (near the
    /// slow-consumer bound the hub's loop stops holding its writes).
    @inline(__always)
    func didQueue(pendingBytes: Int, eagerBytes: Int, promptBytes: Int) {
        let handOff = self.handOff
        handOff.source.noteMessageQueued()
        if pendingBytes >= eagerBytes {
            if let work = takePending(handOffPlace.generation) { handOff.post(work) }
            handOff.handOverNow()
            return
        }
        if pendingBytes >= promptBytes { handOff.source.writeAtEndOfPass() }
        guard let generation = handOffPlace.take() else { return }
        handOff.gather { [self] in self.takePending(generation) }
    }

    /// Hands `change` to the connection's loop after what is pending.
    func handAfterPending(_ change: @escaping () -> Void) {
        let handOff = self.handOff
        if let work = takePending(handOffPlace.generation) { handOff.post(work) }
        handOff.post(change)
    }

    /// The work that writes what is pending, unless the place `generation` was given up
    /// (what was pending went before a change).
    private func takePending(_ generation: Int) -> (() -> Void)? {
        guard handOffPlace.claim(generation) else { return nil }
        return takePendingWork()
    }
}
