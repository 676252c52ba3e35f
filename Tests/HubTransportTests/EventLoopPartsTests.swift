@testable import HubTransport
import Synchronization
import Testing

/// The event loop's parts, each on its own, without a thread or a socket.
@Suite("EventLoop parts")
struct EventLoopPartsTests {
    @Test func bufferPoolRecyclesBoundedBuffers() {
        var pool = BufferPool(maximumSpareCount: 2, maximumSpareCapacity: 1024, maximumScratchCapacity: 4096)
        var small = pool.take()
        small.append(contentsOf: repeatElement(1, count: 100))
        let capacity = small.capacity
        pool.recycle(&small)
        #expect(small.isEmpty)
        #expect(pool.spareCount == 1)
        let reused = pool.take()
        #expect(reused.isEmpty)
        #expect(reused.capacity == capacity)
        #expect(pool.spareCount == 0)

        var large = [UInt8](repeating: 0, count: 2048)
        pool.recycle(&large)  // over the capacity bound: freed
        #expect(pool.spareCount == 0)
        for _ in 0..<3 {
            var buffer: [UInt8] = [1]
            pool.recycle(&buffer)
        }
        #expect(pool.spareCount == 2)  // the count bound

        var scratch = pool.takeScratch()
        scratch.append(contentsOf: [1, 2, 3])
        pool.returnScratch(&scratch)
        let again = pool.takeScratch()
        #expect(again.isEmpty)
        #expect(again.capacity >= 3)
    }

    @Test func portRegistryRefusesATakenPortButNotTheEphemeralOne() throws {
        var ports = PortRegistry()
        try ports.checkAvailable(8080)
        ports.register(8080)
        #expect(ports.contains(8080))
        #expect(throws: TransportError(code: .listenFailed, message: "another server of this event loop listens on 8080")) {
            try ports.checkAvailable(8080)
        }
        try ports.checkAvailable(0)
        try ports.checkAvailable(8081)
    }

    @Test func contextArenaKeepsStringsAndObjectsUntilReleased() {
        final class Probe {}
        weak var weakProbe: Probe?
        let arena = ContextArena()
        do {
            let probe = Probe()
            weakProbe = probe
            arena.retain(probe)
        }
        let string = arena.cString("hub.v1")
        #expect(String(cString: string) == "hub.v1")
        let zeroed = arena.allocate(UInt64.self, count: 4)
        #expect((0..<4).allSatisfy { zeroed[$0] == 0 })
        #expect(weakProbe != nil)
        arena.releaseAll()
        #expect(weakProbe == nil)
    }

    /// Counts the wake-ups a work queue asks for.
    final class Wakes: Sendable {
        let count = Atomic(0)
        func wake() { count.add(1, ordering: .relaxed) }
        var value: Int { count.load(ordering: .relaxed) }
    }

    /// Records the work that ran.
    final class Log: Sendable {
        let values = Mutex<[Int]>([])
        func append(_ value: Int) { values.withLock { $0.append(value) } }
        var all: [Int] { values.withLock { $0 } }
    }

    private func work(_ log: Log, _ value: Int) -> WorkQueue.Work {
        WorkQueue.Work(run: { log.append(value) }, drop: nil)
    }

    @Test func workQueueWakesOncePerBatchAndOnlyOnceRunning() {
        let queue = WorkQueue()
        let wakes = Wakes()
        let log = Log()
        #expect(queue.enqueue(work(log, 1)))  // before the loop runs: queued, no wake-up
        #expect(!queue.isWakePending)
        queue.open { wakes.wake() }
        #expect(wakes.value == 1)  // waiting work wakes the loop as soon as it runs
        #expect(queue.enqueue(work(log, 2)))
        #expect(wakes.value == 1)  // joins the pending batch
        var batch: [WorkQueue.Work] = []
        queue.takePending(into: &batch)
        #expect(!queue.isWakePending)
        for item in batch { item.run() }
        #expect(log.all == [1, 2])
        #expect(queue.enqueue(work(log, 3)))
        #expect(wakes.value == 2)  // a new batch
        #expect(queue.isWakePending)
        queue.wake()
        #expect(wakes.value == 3)
    }

    @Test func workQueueRefusesWorkOnceClosedAndReturnsWhatWaited() {
        let queue = WorkQueue()
        let wakes = Wakes()
        let log = Log()
        queue.open { wakes.wake() }
        #expect(queue.enqueue(work(log, 1)))
        let left = queue.close()
        #expect(left.count == 1)
        #expect(!queue.enqueue(work(log, 2)))
        queue.detachWaker()
        queue.wake()
        #expect(wakes.value == 1)
    }

    @Test func loopTimerArmsForTheEarliestDeadlineInWholeMicroseconds() {
        var timer = LoopTimer()
        #expect(timer.update(nextDeadline: nil, now: 0) == .keep)
        #expect(timer.update(nextDeadline: 2_400_001, now: 0) == .arm(microseconds: 2_401))
        #expect(timer.update(nextDeadline: 2_400_001, now: 1_000) == .keep)
        #expect(timer.update(nextDeadline: 500, now: 1_000) == .arm(microseconds: 0))
        #expect(timer.armedDeadline == 500)
        #expect(timer.update(nextDeadline: nil, now: 1_000) == .cancel)
        #expect(timer.update(nextDeadline: nil, now: 1_000) == .keep)
        #expect(timer.update(nextDeadline: 5_000, now: 1_000) == .arm(microseconds: 4))
        timer.fired()
        #expect(timer.armedDeadline == nil)
        #expect(timer.update(nextDeadline: 5_000, now: 5_000) == .arm(microseconds: 0))  // re-armed after firing
    }

    /// lws polls in whole milliseconds: with less than one left the loop sleeps through
    /// it (unless work waits) instead of polling with a zero timeout until the deadline.
    @Test func loopTimerSleepsThroughTheLastFractionOfAMillisecond() {
        var timer = LoopTimer()
        var clockReads = 0
        func now(_ value: Int64) -> Int64 {
            clockReads += 1
            return value
        }
        #expect(timer.wait(now: now(0), hasPendingWork: false) == .poll)
        #expect(clockReads == 0)  // nothing armed: the clock is not read
        _ = timer.update(nextDeadline: 10_000_000, now: 7_600_000)
        #expect(timer.wait(now: now(7_600_000), hasPendingWork: false) == .poll)  // 2.4 ms: lws sleeps 2
        #expect(timer.wait(now: now(9_000_000), hasPendingWork: false) == .poll)  // exactly 1 ms
        #expect(timer.wait(now: now(9_000_001), hasPendingWork: false) == .sleep(nanoseconds: 999_999))
        #expect(timer.wait(now: now(9_600_000), hasPendingWork: false) == .sleep(nanoseconds: 400_000))
        #expect(timer.wait(now: now(9_600_000), hasPendingWork: true) == .poll)  // work first
        #expect(timer.wait(now: now(10_000_000), hasPendingWork: false) == .poll)  // due: fire it
        #expect(timer.wait(now: now(10_000_500), hasPendingWork: false) == .poll)
        #expect(clockReads == 7)
        timer.fired()
        #expect(timer.wait(now: now(9_600_000), hasPendingWork: false) == .poll)
    }

    @Test func timerQueueFiresInDeadlineThenSchedulingOrderAndRepeats() {
        var queue = TimerQueue()
        var fired: [String] = []
        _ = queue.insert(deadline: 30, interval: nil) { fired.append("c") }
        _ = queue.insert(deadline: 10, interval: nil) { fired.append("a") }
        let cancelled = queue.insert(deadline: 20, interval: nil) { fired.append("x") }
        _ = queue.insert(deadline: 20, interval: nil) { fired.append("b") }
        _ = queue.insert(deadline: 10, interval: 15) { fired.append("r") }
        queue.cancel(cancelled)
        #expect(queue.nextDeadline == 10)
        var mark = queue.sequenceMark
        while let action = queue.popDue(now: 25, before: mark) { action() }
        // The repeating timer fires once per pass, then waits for its next deadline (25).
        #expect(fired == ["a", "r", "b"])
        #expect(queue.nextDeadline == 25)
        mark = queue.sequenceMark
        while let action = queue.popDue(now: 40, before: mark) { action() }
        #expect(fired == ["a", "r", "b", "r", "c"])
        #expect(queue.nextDeadline == 40)
        queue.removeAll()
        #expect(queue.nextDeadline == nil)
    }
}
