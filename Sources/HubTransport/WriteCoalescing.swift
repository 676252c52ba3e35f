/// When an event loop writes what its connections queued: a state machine consulted at
/// the end of every service pass that left writes pending.
///
/// While input keeps arriving (the pass handled inbound messages or handed-in work), the
/// loop services once more without waiting before it writes, so that the messages the
/// next input produces join the same writes: a fan-out under load then leaves in one
/// write (and one TCP segment) per connection for many messages, as nats-server's
/// per-client flush does. The first pass without input writes at once, so at low rates
/// the only cost is one `poll` that does not wait. Writes are held back at most
/// ``maximumDelay`` nanoseconds and ``maximumPasses`` passes.
struct WriteCoalescing {
    /// The longest writes are held back while input keeps arriving (ns); 0 never holds back.
    let maximumDelay: Int64
    /// The most passes writes are held back for.
    let maximumPasses: Int

    /// When the writes now pending were first held back.
    private(set) var heldSince: Int64?
    /// Passes the pending writes have been held back for.
    private(set) var heldPasses = 0

    /// Holds back for at most `maximumDelay` ns and `maximumPasses` passes.
    init(maximumDelay: Int64, maximumPasses: Int = 64) {
        self.maximumDelay = maximumDelay
        self.maximumPasses = maximumPasses
    }

    /// What to do after a pass that left writes pending.
    enum Decision: Equatable {
        /// Service again without waiting, then decide again.
        case holdBack
        /// Write now.
        case write
    }

    /// Decides after a pass that left writes pending, given whether the pass handled
    /// input, at `now` (monotonic ns).
    mutating func afterPass(handledInput: Bool, now: Int64) -> Decision {
        guard handledInput, maximumDelay > 0 else { return written() }
        let since = heldSince ?? now
        guard heldPasses < maximumPasses, now - since < maximumDelay else { return written() }
        heldSince = since
        heldPasses += 1
        return .holdBack
    }

    private mutating func written() -> Decision {
        heldSince = nil
        heldPasses = 0
        return .write
    }
}
