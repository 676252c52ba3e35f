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
///
/// The delay adapts to the stream (between ``maximumDelay`` and ``streamingDelay``): after
/// each write for at least ``minimumConnectionsToWait`` connections, the rate at which
/// each of them queued messages since the last write is averaged over about four writes
/// (``streamRate``); at ``messagesPerDelayToGrow`` or more per ``maximumDelay`` the next
/// hold may last twice as long, below half of that half as long. While the stream is
/// that heavy, a lull (a quiet pass after an old write) is waited out too. A
/// heavy fan-out then leaves in a write per connection every few milliseconds rather
/// than every half millisecond: fewer writes for the broker and far fewer wake-ups and
/// reads for a subscriber that is busy keeping up (what nats-server gains by letting
/// tens of milliseconds pile up), while a lone message, a request's answer, or a stream
/// of a few messages per half millisecond keeps its latency.
///
/// The loop's own load bounds the growth too (``noteLoopLoad(_:)``): while the loop is
/// mostly idle (below ``idleBelow`` of the wall-clock time running or waiting to run), a
/// heavy stream's hold grows no further than ``idleLoopDelay``, spending the idle CPU on
/// latency; from ``busyAbove`` on it may grow to ``streamingDelay`` again, where holding
/// saves the CPU a saturated loop lacks and its subscribers are behind anyway.
struct WriteCoalescing {
    /// How long writes are held back while input keeps arriving (ns), when a stream
    /// starts; 0 never holds back.
    let maximumDelay: Int64
    /// The longest a heavy stream's writes are held back (ns; at least ``maximumDelay``).
    let streamingDelay: Int64
    /// The longest a heavy stream's writes are held back while the loop is mostly idle
    /// (ns; between ``maximumDelay`` and ``streamingDelay``).
    let idleLoopDelay: Int64
    /// Below this share of its time busy, a loop is mostly idle; above ``busyAbove``, busy
    /// again (between the two it stays as it was, so that the shorter hold's own cost does
    /// not flip it back and forth).
    static let idleBelow = 0.35
    static let busyAbove = 0.6
    /// Whether the loop is mostly idle, from the loads it noted; `false` until it notes one.
    private(set) var loopIsIdle = false
    /// The rate, in messages per connection per ``maximumDelay``, at which writes for
    /// several connections make the next hold twice as long (below half of it, half as
    /// long).
    let messagesPerDelayToGrow: Int
    /// The most passes writes are held back for, at ``maximumDelay`` (a longer hold
    /// allows proportionally more).
    let maximumPasses: Int
    /// Whether a pass without input may wait for more while messages stream in (the loop
    /// can wait for input or a deadline, whichever comes first).
    var waitsForInput: Bool
    /// The fewest connections with pending writes for a pass without input to wait.
    let minimumConnectionsToWait: Int

    /// When the writes now pending were first held back.
    private(set) var heldSince: Int64?
    /// Passes the pending writes have been held back for.
    private(set) var heldPasses = 0
    /// When the loop last wrote.
    private(set) var lastWrite: Int64?
    /// How long the current (or next) hold may last (ns).
    private(set) var delay: Int64
    /// Messages per connection per ``maximumDelay`` queued between recent writes for
    /// several connections (a moving average over about four writes).
    private(set) var streamRate: Double = 0

    /// Holds back for at most `maximumDelay` ns and `maximumPasses` passes, growing up
    /// to `streamingDelay` ns (by default no growth) while a heavy stream lasts.
    init(
        maximumDelay: Int64, streamingDelay: Int64? = nil, idleLoopDelay: Int64? = nil, messagesPerDelayToGrow: Int = 2,
        maximumPasses: Int = 64, waitsForInput: Bool = false, minimumConnectionsToWait: Int = 3
    ) {
        self.maximumDelay = max(0, maximumDelay)
        self.streamingDelay = max(self.maximumDelay, streamingDelay ?? maximumDelay)
        self.idleLoopDelay = min(self.streamingDelay, max(self.maximumDelay, idleLoopDelay ?? self.streamingDelay))
        self.messagesPerDelayToGrow = max(1, messagesPerDelayToGrow)
        self.maximumPasses = maximumPasses
        self.waitsForInput = waitsForInput
        self.minimumConnectionsToWait = minimumConnectionsToWait
        delay = self.maximumDelay
    }

    /// Notes the share of wall-clock time (0 to 1) the loop spent running or waiting to
    /// run since it last noted one.
    mutating func noteLoopLoad(_ busy: Double) {
        if loopIsIdle {
            if busy > WriteCoalescing.busyAbove { loopIsIdle = false }
        } else if busy < WriteCoalescing.idleBelow {
            loopIsIdle = true
            delay = min(delay, idleLoopDelay)
        }
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
    /// which queued `queuedMessages` messages since the last write, given whether the pass
    /// handled input, at `now` (monotonic ns). `mustWrite` (a queue near its bound, or
    /// messages held back elsewhere already) writes now, and the write counts as any other.
    mutating func afterPass(
        handledInput: Bool, now: Int64, pendingConnections: Int = .max, queuedMessages: Int = 0, mustWrite: Bool = false
    ) -> Decision {
        guard maximumDelay > 0, !mustWrite else {
            return written(at: now, pendingConnections: pendingConnections, queuedMessages: queuedMessages)
        }
        let since = heldSince ?? now
        guard heldPasses < passLimit, now - since < delay else {
            return written(at: now, pendingConnections: pendingConnections, queuedMessages: queuedMessages)
        }
        if handledInput {
            return held(since: since, .holdBack)
        }
        if waitsForInput, pendingConnections >= minimumConnectionsToWait, let lastWrite,
            now - lastWrite < delay || isStreamHeavy
        {
            return held(since: since, .waitUntil(since + delay))
        }
        return written(at: now, pendingConnections: pendingConnections, queuedMessages: queuedMessages)
    }

    /// Whether the recent writes for several connections carried at least
    /// ``messagesPerDelayToGrow`` messages per connection per ``maximumDelay``: a lull
    /// in such a stream (its subscribers busy reading what the last write brought, or
    /// its publisher waiting for them) is waited out rather than ended by a write of a
    /// message or two, which would slow those subscribers further.
    private var isStreamHeavy: Bool {
        streamingDelay > maximumDelay && streamRate >= Double(messagesPerDelayToGrow)
    }

    /// The passes the current hold may last.
    private var passLimit: Int {
        guard maximumDelay > 0 else { return maximumPasses }
        let (scaled, overflow) = maximumPasses.multipliedReportingOverflow(by: Int(delay / maximumDelay))
        return overflow ? .max : scaled
    }

    /// Sets the next hold's length from the rate at which each waiting connection
    /// queued messages since the last write: twice as long at ``messagesPerDelayToGrow``
    /// or more per ``maximumDelay``, half as long below half of that. Writes for
    /// fewer than ``minimumConnectionsToWait`` connections (answers) leave it alone.
    private mutating func adapt(now: Int64, pendingConnections: Int, queuedMessages: Int) {
        guard streamingDelay > maximumDelay, pendingConnections >= minimumConnectionsToWait,
            pendingConnections != .max, let lastWrite, now > lastWrite
        else { return }
        // The rate since the last write, queued / (connections × interval), in messages
        // per maximumDelay, averaged over the last few writes.
        let rate = Double(queuedMessages) * Double(maximumDelay) / (Double(pendingConnections) * Double(now - lastWrite))
        streamRate += (rate - streamRate) / 4
        let ceiling = loopIsIdle ? idleLoopDelay : streamingDelay
        if streamRate >= Double(messagesPerDelayToGrow) {
            delay = delay > ceiling / 2 ? ceiling : delay * 2
        } else if streamRate * 2 < Double(messagesPerDelayToGrow) {
            delay = max(maximumDelay, delay / 2)
        }
        delay = min(delay, ceiling)
    }

    private mutating func held(since: Int64, _ decision: Decision) -> Decision {
        heldSince = since
        heldPasses += 1
        return decision
    }

    private mutating func written(at now: Int64, pendingConnections: Int, queuedMessages: Int) -> Decision {
        adapt(now: now, pendingConnections: pendingConnections, queuedMessages: queuedMessages)
        heldSince = nil
        heldPasses = 0
        lastWrite = now
        return .write
    }
}
