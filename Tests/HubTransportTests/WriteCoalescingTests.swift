@testable import HubTransport
import Testing

/// When a loop writes what its connections queued, decided in virtual time: writes wait
/// for the next pass only while input keeps arriving, and never longer than the bounds.
@Suite("WriteCoalescing")
struct WriteCoalescingTests {
    @Test func aPassWithoutInputWritesAtOnce() {
        var coalescing = WriteCoalescing(maximumDelay: 500_000)
        #expect(coalescing.afterPass(handledInput: false, now: 0) == .write)
        #expect(coalescing.heldSince == nil)
    }

    @Test func inputHoldsWritesBackUntilAPassBringsNone() {
        var coalescing = WriteCoalescing(maximumDelay: 500_000)
        #expect(coalescing.afterPass(handledInput: true, now: 1_000) == .holdBack)
        #expect(coalescing.afterPass(handledInput: true, now: 3_000) == .holdBack)
        #expect(coalescing.heldSince == 1_000)
        #expect(coalescing.heldPasses == 2)
        #expect(coalescing.afterPass(handledInput: false, now: 4_000) == .write)
        // The next burst starts a new hold.
        #expect(coalescing.afterPass(handledInput: true, now: 10_000) == .holdBack)
        #expect(coalescing.heldSince == 10_000)
        #expect(coalescing.heldPasses == 1)
    }

    @Test func writesWaitNoLongerThanTheDelay() {
        var coalescing = WriteCoalescing(maximumDelay: 500_000)
        var now: Int64 = 0
        var decisions: [WriteCoalescing.Decision] = []
        // Input on every pass, a pass every 100 µs: held back for 500 µs, then written.
        for _ in 0..<7 {
            decisions.append(coalescing.afterPass(handledInput: true, now: now))
            now += 100_000
        }
        #expect(decisions == [.holdBack, .holdBack, .holdBack, .holdBack, .holdBack, .write, .holdBack])
    }

    @Test func writesWaitNoMoreThanTheMaximumPasses() {
        var coalescing = WriteCoalescing(maximumDelay: 1_000_000_000, maximumPasses: 3)
        let decisions = (0..<5).map { _ in coalescing.afterPass(handledInput: true, now: 42) }
        #expect(decisions == [.holdBack, .holdBack, .holdBack, .write, .holdBack])
    }

    /// On a loop that can wait for input: while messages stream in (the last write is
    /// recent) a pass without input waits for more until the delay since the first held
    /// pass is over; at low rates (the last write is old) it writes at once.
    @Test func aStreamWaitsForInputWhereTheLoopCanWait() {
        var coalescing = WriteCoalescing(maximumDelay: 500_000, waitsForInput: true)
        // Nothing written yet: a lone message is written at the end of its pass.
        #expect(coalescing.afterPass(handledInput: false, now: 1_000_000) == .write)
        #expect(coalescing.lastWrite == 1_000_000)
        // The next message 100 µs later: messages are streaming, wait for more.
        #expect(coalescing.afterPass(handledInput: false, now: 1_100_000) == .waitUntil(1_600_000))
        #expect(coalescing.afterPass(handledInput: true, now: 1_300_000) == .holdBack)
        #expect(coalescing.afterPass(handledInput: false, now: 1_400_000) == .waitUntil(1_600_000))
        #expect(coalescing.afterPass(handledInput: false, now: 1_600_000) == .write)
        // 2 ms without a write: the stream stopped, the next message leaves at once.
        #expect(coalescing.afterPass(handledInput: false, now: 3_600_000) == .write)
        // A loop that cannot wait never does.
        var polling = WriteCoalescing(maximumDelay: 500_000)
        #expect(polling.afterPass(handledInput: false, now: 0) == .write)
        #expect(polling.afterPass(handledInput: false, now: 100_000) == .write)
    }

    /// An answer to the client that asked (writes pending on one or two connections) is
    /// written at the end of its pass even while messages stream: a request/answer
    /// client used to wait the delay, rounded up to a millisecond, on every round trip.
    @Test func anAnswerToOneClientNeverWaitsForInput() {
        var coalescing = WriteCoalescing(maximumDelay: 500_000, waitsForInput: true)
        #expect(coalescing.afterPass(handledInput: false, now: 1_000_000, pendingConnections: 1) == .write)
        // 300 µs later (the client's round trip): still written at once.
        #expect(coalescing.afterPass(handledInput: true, now: 1_300_000, pendingConnections: 1) == .holdBack)
        #expect(coalescing.afterPass(handledInput: false, now: 1_310_000, pendingConnections: 1) == .write)
        #expect(coalescing.afterPass(handledInput: false, now: 1_400_000, pendingConnections: 2) == .write)
        // A fan-out in the same stream waits as before.
        #expect(coalescing.afterPass(handledInput: false, now: 1_500_000, pendingConnections: 3) == .waitUntil(2_000_000))
        #expect(coalescing.afterPass(handledInput: false, now: 2_000_000, pendingConnections: 100) == .write)
    }

    // MARK: - A hold that adapts to the stream

    /// A heavy fan-out (10 messages per connection per 500 µs) holds its writes longer and
    /// longer, up to the streaming delay: a write per connection every 4 ms, 40 messages
    /// each, and no message waits longer than that.
    @Test func aHeavyStreamHoldsUpToTheStreamingDelay() {
        var stream = StreamSimulation(connections: 100, interval: 50_000)
        stream.run(messages: 2_000)
        #expect(stream.coalescing.delay == 4_000_000)
        #expect(stream.writes.suffix(10).allSatisfy { $0.messages >= 70 })
        #expect(stream.writes.map(\.waited).max()! <= 4_000_000)
        #expect(stream.writes.count < 40)
    }

    /// 1,000 messages a second fanned out to 100 (the rate scenario): every message is
    /// written at the end of its pass, and the hold never grows.
    @Test func aLightStreamIsWrittenAtOnce() {
        var stream = StreamSimulation(connections: 100, interval: 1_000_000)
        stream.run(messages: 200)
        #expect(stream.writes.count == 200)
        #expect(stream.writes.allSatisfy { $0.waited == 0 && $0.messages == 1 })
        #expect(stream.coalescing.delay == 500_000)
    }

    /// Three messages a millisecond (below the growth rate): held no longer than the
    /// first delay.
    @Test func aModerateStreamKeepsTheFirstDelay() {
        var stream = StreamSimulation(connections: 100, interval: 333_000)
        stream.run(messages: 300)
        #expect(stream.coalescing.delay == 500_000)
        #expect(stream.writes.map(\.waited).max()! <= 500_000)
    }

    /// When a heavy stream slows to 1,000 a second, the hold shrinks back within tens of
    /// milliseconds (about a dozen writes), and messages leave at once again.
    @Test func aStreamThatSlowsDownGetsItsLatencyBack() {
        var stream = StreamSimulation(connections: 100, interval: 50_000)
        stream.run(messages: 2_000)
        #expect(stream.coalescing.delay == 4_000_000)
        stream.interval = 1_000_000
        stream.writes.removeAll()
        let slowedDown = stream.now
        stream.run(messages: 100)
        #expect(stream.coalescing.delay == 500_000)
        let later = stream.writes.filter { $0.at > slowedDown + 60_000_000 }
        #expect(later.count >= 39)
        #expect(later.allSatisfy { $0.waited == 0 && $0.messages == 1 })
    }

    /// On a mostly idle loop a heavy stream's hold grows no further than the idle bound
    /// (its spare CPU goes to latency); once the loop is busy again it grows to the
    /// streaming delay, and a load between the two thresholds changes nothing.
    @Test func aMostlyIdleLoopHoldsAHeavyStreamNoLongerThanTheIdleBound() {
        var stream = StreamSimulation(connections: 100, interval: 50_000)
        stream.coalescing = WriteCoalescing(
            maximumDelay: 500_000, streamingDelay: 4_000_000, idleLoopDelay: 1_000_000, waitsForInput: true)
        stream.coalescing.noteLoopLoad(0.2)
        stream.run(messages: 2_000)
        #expect(stream.coalescing.loopIsIdle)
        #expect(stream.coalescing.delay == 1_000_000)
        #expect(stream.writes.map(\.waited).max()! <= 1_000_000)

        // Half busy: between the thresholds, still idle.
        stream.coalescing.noteLoopLoad(0.5)
        stream.run(messages: 1_000)
        #expect(stream.coalescing.delay == 1_000_000)

        // Busy: the hold may grow to the streaming delay again.
        stream.coalescing.noteLoopLoad(0.9)
        stream.run(messages: 2_000)
        #expect(!stream.coalescing.loopIsIdle)
        #expect(stream.coalescing.delay == 4_000_000)

        // Idle again: the hold is cut to the idle bound at once (the hold in progress
        // keeps its deadline; every later one is bounded).
        stream.coalescing.noteLoopLoad(0.1)
        #expect(stream.coalescing.delay == 1_000_000)
        stream.writes.removeAll()
        stream.run(messages: 1_000)
        #expect(stream.writes.dropFirst().map(\.waited).max()! <= 1_000_000)
    }

    /// Without an idle bound (or before any load is noted) the hold grows as before.
    @Test func withoutAnIdleBoundTheLoadChangesNothing() {
        var stream = StreamSimulation(connections: 100, interval: 50_000)
        stream.coalescing.noteLoopLoad(0.1)
        stream.run(messages: 2_000)
        #expect(stream.coalescing.delay == 4_000_000)
    }

    /// A lull in a heavy stream (its subscribers busy with the last write) is waited
    /// out: the next message joins those after it instead of leaving alone at once.
    @Test func aLullInAHeavyStreamIsWaitedOut() {
        var stream = StreamSimulation(connections: 100, interval: 50_000)
        stream.run(messages: 2_000)
        stream.finish()
        stream.pause(for: 6_000_000)
        stream.writes.removeAll()
        stream.run(messages: 200)
        #expect(stream.writes.first.map { $0.messages > 1 } == true)
    }

    /// Writes for one or two connections (answers) never wait, however fast they come,
    /// and do not change the hold.
    @Test func answersNeitherWaitNorChangeTheHold() {
        var stream = StreamSimulation(connections: 1, interval: 50_000)
        stream.run(messages: 500)
        #expect(stream.writes.count == 500)
        #expect(stream.writes.allSatisfy { $0.waited == 0 })
        #expect(stream.coalescing.delay == 500_000)
    }

    /// A write that must go now (a queue near its bound) ends the hold like any other:
    /// the next message starts a new hold, and the write counts as the last one.
    @Test func aWriteThatMustGoNowEndsTheHold() {
        var coalescing = WriteCoalescing(maximumDelay: 500_000, waitsForInput: true)
        #expect(coalescing.afterPass(handledInput: true, now: 1_000) == .holdBack)
        #expect(coalescing.afterPass(handledInput: true, now: 2_000, mustWrite: true) == .write)
        #expect(coalescing.heldSince == nil && coalescing.heldPasses == 0)
        #expect(coalescing.lastWrite == 2_000)
        #expect(coalescing.afterPass(handledInput: true, now: 400_000) == .holdBack)
        #expect(coalescing.heldSince == 400_000)
    }

    @Test func aZeroDelayNeverHoldsBack() {
        var coalescing = WriteCoalescing(maximumDelay: 0)
        #expect(coalescing.afterPass(handledInput: true, now: 0) == .write)
    }

    @Test func durationsConvertToNanoseconds() {
        #expect(Duration.microseconds(500).nanoseconds == 500_000)
        #expect(Duration.seconds(2).nanoseconds == 2_000_000_000)
        #expect(Duration.seconds(Int64.max).nanoseconds == .max)
    }
}

/// A loop's passes in virtual time as a stream arrives: a message for each of
/// `connections` connections every `interval` ns. A pass that handles a message is
/// followed at once by a quiet pass; a wait ends at its deadline or the next message.
private struct StreamSimulation {
    /// One write: when, how many messages per connection, how long the oldest waited.
    struct Write {
        let at: Int64
        let messages: Int
        let waited: Int64
    }

    var coalescing = WriteCoalescing(maximumDelay: 500_000, streamingDelay: 4_000_000, waitsForInput: true)
    let connections: Int
    var interval: Int64
    var now: Int64 = 1_000_000_000
    var writes: [Write] = []
    private var pending = 0
    private var oldest: Int64?
    private var deadline: Int64?

    init(connections: Int, interval: Int64) {
        self.connections = connections
        self.interval = interval
    }

    /// `messages` more messages, `interval` apart (the first one `interval` from now).
    mutating func run(messages: Int) {
        for _ in 0..<messages {
            let arrival = now + interval
            wakeForDeadlines(before: arrival)
            now = arrival
            pending += 1
            if oldest == nil { oldest = now }
            decide(handledInput: true)
            decide(handledInput: false)
        }
    }

    /// Lets the held writes go at their deadline.
    mutating func finish() {
        wakeForDeadlines(before: .max)
    }

    /// Nothing arrives for `nanoseconds`.
    mutating func pause(for nanoseconds: Int64) {
        wakeForDeadlines(before: now + nanoseconds)
        now += nanoseconds
    }

    private mutating func wakeForDeadlines(before time: Int64) {
        while let due = deadline, due <= time {
            now = due
            deadline = nil
            decide(handledInput: false)
        }
    }

    private mutating func decide(handledInput: Bool) {
        guard pending > 0 else { return }
        switch coalescing.afterPass(
            handledInput: handledInput, now: now, pendingConnections: connections,
            queuedMessages: pending * connections)
        {
        case .write:
            writes.append(Write(at: now, messages: pending, waited: now - (oldest ?? now)))
            pending = 0
            oldest = nil
            deadline = nil
        case .waitUntil(let due):
            deadline = due
        case .holdBack:
            break
        }
    }
}
