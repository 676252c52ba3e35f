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
