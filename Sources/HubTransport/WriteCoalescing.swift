/// When an event loop writes what its connections queued: a state machine consulted at
/// the end of every service pass that left writes pending.
///
/// While input keeps arriving (the pass handled inbound messages or handed-in work), the
/// loop services once more without waiting before it writes, so that the messages the
/// next input produces join the same writes: a fan-out under load then leaves in one
/// write (and one TCP segment) per connection for many messages, as nats-server's
/// per-client flush does. Writes are held back at most ``maximumDelay`` nanoseconds and
/// ``maximumPasses`` passes.
///
/// A pass without input writes at once, unless the loop ``waitsForInput`` and wrote less
/// than ``maximumDelay`` ago: then messages are streaming in faster than one per delay,
/// and the loop waits (for input, or until the delay since the held writes' first pass
/// is over) rather than writing a message or two per pass. On epoll a pass costs so
/// little that, without that wait, a busy fan-out wrote about one message per write. At
/// low rates (the last write is older than the delay) a lone message is written at the
/// end of its pass. Only a fan-out waits (writes pending on at least
/// ``minimumConnectionsToWait`` connections): a pass that leaves writes for one or two
/// connections (an `ack` to the client that asked, whatever its rate) writes at once, or
/// every request of a request/answer client would wait the delay (rounded up to the
/// poller's millisecond: 1.2 ms a round trip instead of 0.1 ms).
struct WriteCoalescing {
    /// The longest writes are held back while input keeps arriving (ns); 0 never holds back.
    let maximumDelay: Int64
    /// The most passes writes are held back for.
    let maximumPasses: Int
    /// Whether a pass without input may wait for more while messages stream in (the loop
    /// can wait for input or a deadline, whichever comes first).
    let waitsForInput: Bool
    /// The fewest connections with pending writes for a pass without input to wait.
    let minimumConnectionsToWait: Int

    /// When the writes now pending were first held back.
    private(set) var heldSince: Int64?
    /// Passes the pending writes have been held back for.
    private(set) var heldPasses = 0
    /// When the loop last wrote.
    private(set) var lastWrite: Int64?

    /// Holds back for at most `maximumDelay` ns and `maximumPasses` passes.
    init(maximumDelay: Int64, maximumPasses: Int = 64, waitsForInput: Bool = false, minimumConnectionsToWait: Int = 3) {
        self.maximumDelay = maximumDelay
        self.maximumPasses = maximumPasses
        self.waitsForInput = waitsForInput
        self.minimumConnectionsToWait = minimumConnectionsToWait
    }

    /// What to do after a pass that left writes pending.
    enum Decision: Equatable {
        /// Service again without waiting, then decide again.
        case holdBack
        /// Service again, waiting for input until the deadline (monotonic ns), then decide again.
        case waitUntil(Int64)
        /// Write now.
        case write
    }

    /// Decides after a pass that left writes pending on `pendingConnections` connections,
    /// given whether the pass handled input, at `now` (monotonic ns).
    mutating func afterPass(handledInput: Bool, now: Int64, pendingConnections: Int = .max) -> Decision {
        guard maximumDelay > 0 else { return written(at: now) }
        let since = heldSince ?? now
        guard heldPasses < maximumPasses, now - since < maximumDelay else { return written(at: now) }
        if handledInput {
            return held(since: since, .holdBack)
        }
        if waitsForInput, pendingConnections >= minimumConnectionsToWait, let lastWrite, now - lastWrite < maximumDelay {
            return held(since: since, .waitUntil(since + maximumDelay))
        }
        return written(at: now)
    }

    private mutating func held(since: Int64, _ decision: Decision) -> Decision {
        heldSince = since
        heldPasses += 1
        return decision
    }

    private mutating func written(at now: Int64) -> Decision {
        heldSince = nil
        heldPasses = 0
        lastWrite = now
        return .write
    }
}
