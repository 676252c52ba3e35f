import HubLoop
import NetworkTestSupport
import Foundation
import HubEngine
@testable import HubTransport
import Testing

@Suite("EventLoop")
struct EventLoopTests {
    /// A loop waits through libev on epoll unless told otherwise: a wake-up costs the
    /// same however many connections are idle (wsbench's idle scenario measures it).
    @Test func aLoopWaitsWithEpollByDefault() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        #expect(loop.eventLibrary == .libev)
        #expect(loop.waitsWithEpoll)
        let polling = try EventLoop(configuration: .init(eventLibrary: .poll))
        defer { polling.shutdown() }
        #expect(polling.eventLibrary == .poll)
        #expect(!polling.waitsWithEpoll)
    }

    /// A loop asked to measure its passes reports the longest one in CPU time (a pass
    /// that spins for 20 ms of CPU is seen), and starts a new window at each reading;
    /// by default it measures nothing.
    @Test(arguments: [EventLoop.Configuration.EventLibrary.libev, .poll])
    func aLoopReportsItsLongestPassInCPUTime(library: EventLoop.Configuration.EventLibrary) async throws {
        var configuration = EventLoop.Configuration(eventLibrary: library)
        configuration.measuresPassCPUTime = true
        let loop = try EventLoop(configuration: configuration)
        defer { loop.shutdown() }
        _ = loop.takeLongestPassCPUTime()
        try await loop.submit {
            func threadCPU() -> Int64 {
                var now = timespec()
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
                return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
            }
            var spun = 0
            let start = threadCPU()
            while threadCPU() - start < 20_000_000 { spun &+= 1 }
            return spun
        }
        // The pass ends after the submitted work: wait for it.
        try await loop.submit {}
        let longest = try #require(loop.takeLongestPassCPUTime())
        #expect(longest >= .milliseconds(20))
        #expect(longest < .seconds(5))
        try await loop.submit {}
        try await loop.submit {}
        #expect(try #require(loop.takeLongestPassCPUTime()) < .milliseconds(20))

        let unmeasured = try EventLoop(configuration: .init(eventLibrary: library))
        defer { unmeasured.shutdown() }
        try await unmeasured.submit {}
        #expect(unmeasured.takeLongestPassCPUTime() == nil)
    }

    @Test func inEventLoopIsTrueOnlyOnTheLoopThread() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        #expect(!loop.inEventLoop)
        let inside = try await onLoop(loop) { loop.inEventLoop }
        #expect(inside)
    }

    /// Seen as a ``LoopExecutor`` (as the stores and the cluster see it), the loop runs
    /// handed-in work on its thread, and a value ``LoopBound`` to it is used there.
    @Test func theLoopIsALoopExecutorForLoopBoundValues() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let executor: any LoopExecutor = loop
        #expect(!executor.inEventLoop)
        let bound = LoopBound([1, 2], eventLoop: executor)
        let ran = EventQueue<[Int]>()
        executor.execute {
            var copy = bound
            copy.value.append(executor.inEventLoop ? 3 : -1)
            ran.push(copy.value)
        }
        #expect(try await ran.next() == [1, 2, 3])
        let before = MonotonicClock.nanoseconds()
        #expect(try await onLoop(loop) { EventLoop.monotonicNanoseconds() } >= before)
    }

    @Test func submitPropagatesErrors() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        await #expect(throws: TransportError.self) {
            try await loop.submit { () throws -> Int in
                throw TransportError(code: .invalidArgument, message: "test")
            }
        }
    }

    /// Eight threads hand in 2,000 closures each: all run on the loop, each thread's in order.
    @Test func executeFromOtherThreadsRunsEverythingInPerThreadOrder() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        final class Tally {
            var lastSeen = [Int](repeating: -1, count: 8)
            var outOfOrder = 0
            var total = 0
            var offLoop = 0
        }
        let tally = try await onLoop(loop) { LoopBound(Tally(), eventLoop: loop) }
        let done = EventQueue<Int>()
        let perThread = 2_000
        for thread in 0..<8 {
            Thread.detachNewThread {
                for index in 0..<perThread {
                    loop.execute {
                        let tally = tally.value
                        if !loop.inEventLoop { tally.offLoop += 1 }
                        if tally.lastSeen[thread] != index - 1 { tally.outOfOrder += 1 }
                        tally.lastSeen[thread] = index
                        tally.total += 1
                        if tally.total == 8 * perThread { done.push(tally.total) }
                    }
                }
            }
        }
        #expect(try await done.next(timeout: .seconds(20), "all closures") == 8 * perThread)
        let (outOfOrder, offLoop) = try await onLoop(loop) { (tally.value.outOfOrder, tally.value.offLoop) }
        #expect(outOfOrder == 0)
        #expect(offLoop == 0)
    }

    @Test func workHandedInAfterShutdownIsDroppedAndSubmitFails() async throws {
        let loop = try EventLoop()
        loop.shutdown()
        loop.shutdown()  // idempotent
        await #expect(throws: TransportError(code: .eventLoopShutDown, message: "the event loop shut down before the work ran")) {
            try await loop.submit { 1 }
        }
    }

    @Test func shutdownCalledFromTheLoopItselfStopsIt() async throws {
        let loop = try EventLoop()
        try await onLoop(loop) { loop.shutdown() }
        loop.shutdown()  // joins the thread that stopped itself
        await #expect(throws: TransportError.self) { try await loop.submit { 1 } }
    }
}

@Suite("EventLoopScheduler")
struct EventLoopSchedulerTests {
    /// Timers fire in deadline order (ties in scheduling order), never before their
    /// deadline, and cancelled ones never fire.
    @Test(arguments: EventLoop.Configuration.EventLibrary.allCases)
    func timersFireInOrderAndCancelWorks(library: EventLoop.Configuration.EventLibrary) async throws {
        let loop = try EventLoop(configuration: .init(eventLibrary: library))
        #expect(loop.eventLibrary == library)
        defer { loop.shutdown() }
        let fired = EventQueue<String>()
        try await onLoop(loop) {
            let scheduler = EventLoopScheduler(eventLoop: loop)
            let start = scheduler.now
            func at(_ ms: Int, _ name: String) -> any Cancellable {
                let deadline = start.advanced(by: .milliseconds(ms))
                return scheduler.schedule(after: deadline) {
                    fired.push(scheduler.now >= deadline ? name : "\(name) early")
                }
            }
            _ = at(30, "c")
            _ = at(10, "a")
            let cancelled = at(20, "cancelled")
            _ = at(20, "b")
            _ = at(40, "d1")
            _ = at(40, "d2")
            _ = at(0, "now")
            cancelled.cancel()
            cancelled.cancel()  // idempotent
        }
        let names = try await fired.next(6, "timers")
        #expect(names == ["now", "a", "b", "c", "d1", "d2"])
    }

    @Test func repeatingTimerRepeatsUntilCancelled() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let ticks = EventQueue<Int>()
        try await onLoop(loop) {
            final class Box { var cancellable: (any Cancellable)?; var count = 0 }
            let scheduler = EventLoopScheduler(eventLoop: loop)
            let box = Box()
            box.cancellable = scheduler.schedule(after: scheduler.now, interval: .milliseconds(2)) {
                box.count += 1
                ticks.push(box.count)
                if box.count == 3 {
                    box.cancellable?.cancel()
                    // A later marker proves nothing fired after the cancel.
                    scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(20))) { ticks.push(-1) }
                }
            }
        }
        #expect(try await ticks.next(4, "ticks") == [1, 2, 3, -1])
    }

    /// A repeating timer with a 1 ns interval yields to the loop between passes: work
    /// handed in from another thread still runs while it ticks.
    @Test func tightRepeatingTimerDoesNotStarveTheLoop() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        final class Box { var cancellable: (any Cancellable)?; var ticks = 0; var stop = false }
        let started = EventQueue<Bool>()
        let box = try await onLoop(loop) {
            let box = Box()
            let scheduler = EventLoopScheduler(eventLoop: loop)
            box.cancellable = scheduler.schedule(after: scheduler.now, interval: .nanoseconds(1)) {
                box.ticks += 1
                if box.ticks == 1 { started.push(true) }
                if box.stop { box.cancellable?.cancel() }
            }
            return LoopBound(box, eventLoop: loop)
        }
        #expect(try await started.next(timeout: .seconds(10), "the first tick"))
        // This work reaches the loop although the timer is due on every pass.
        try await onLoop(loop) { box.value.stop = true }
        let after = try await onLoop(loop) { box.value.ticks }
        let later = try await onLoop(loop) { box.value.ticks }
        #expect(after > 0)
        #expect(after == later)
    }

    /// lws polls in whole milliseconds (rounded down): a timer 1.5 ms ahead leaves half a
    /// millisecond in which lws polls with a zero timeout, pass after pass, until it is
    /// due. The loop sleeps through that remainder instead: a chain of such timers takes
    /// a few service passes each. Counted in passes, not time (busy polling takes
    /// hundreds per timer even on a loaded machine).
    @Test func subMillisecondRemaindersAreSleptThroughNotPolled() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        final class Chain {
            var fired = 0
            var firstPass = 0
        }
        let count = 20
        let passes = EventQueue<Int>()
        try await onLoop(loop) {
            let scheduler = loop.scheduler
            let chain = Chain()
            chain.firstPass = loop.servicePasses
            func scheduleNext() {
                scheduler.schedule(after: scheduler.now.advanced(by: .microseconds(1_500))) {
                    chain.fired += 1
                    if chain.fired == count {
                        passes.push(loop.servicePasses - chain.firstPass)
                    } else {
                        scheduleNext()
                    }
                }
            }
            scheduleNext()
        }
        let used = try await passes.next(timeout: .seconds(20), "the chain of timers")
        #expect(used < count * 10, "\(used) service passes for \(count) timers")
    }

    @Test func scheduleRunsSoonAfterQueuedWork() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let order = EventQueue<Int>()
        try await onLoop(loop) {
            let scheduler = EventLoopScheduler(eventLoop: loop)
            scheduler.schedule { order.push(1) }
            scheduler.schedule { order.push(2) }
            order.push(0)
        }
        #expect(try await order.next(3) == [0, 1, 2])
    }

    /// Work queued for the end of the pass (here by a timer, as by a socket's callback)
    /// runs in that pass, without a wake-up through lws; work it queues runs at the end of
    /// the next pass, which polls without waiting (a chain of a thousand takes a thousand
    /// passes, where passes that waited for the loop's 100-ms kick of lws would take minutes).
    @Test(arguments: EventLoop.Configuration.EventLibrary.allCases)
    func workQueuedForTheEndOfThePassRunsInIt(library: EventLoop.Configuration.EventLibrary) async throws {
        let loop = try EventLoop(configuration: .init(eventLibrary: library))
        defer { loop.shutdown() }
        final class Chain {
            var left = 1_000
            var firstPass = 0
        }
        let passes = EventQueue<Int>()
        try await onLoop(loop) {
            let scheduler = loop.scheduler
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(1))) {
                let first = loop.servicePasses
                loop.executeAtEndOfPass { passes.push(loop.servicePasses - first) }
            }
        }
        #expect(try await passes.next(timeout: .seconds(10), "work queued by a timer") == 0)
        try await onLoop(loop) {
            let scheduler = loop.scheduler
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(1))) {
                let chain = Chain()
                chain.firstPass = loop.servicePasses
                func next() {
                    chain.left -= 1
                    if chain.left == 0 {
                        passes.push(loop.servicePasses - chain.firstPass)
                    } else {
                        loop.executeAtEndOfPass(next)
                    }
                }
                loop.executeAtEndOfPass(next)
            }
        }
        #expect(try await passes.next(timeout: .seconds(60), "a chain of work queued on the loop") == 999)
    }

    @Test func nowIsMonotonic() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let ok = try await onLoop(loop) {
            let scheduler = EventLoopScheduler(eventLoop: loop)
            var previous = scheduler.now
            for _ in 0..<1_000 {
                let next = scheduler.now
                if next < previous { return false }
                previous = next
            }
            return true
        }
        #expect(ok)
    }
}

/// Handlers that react to the closes caused by a loop shutdown (sending, scheduling
/// timers, handing work in) do not disturb the context being destroyed.
@Suite("EventLoopShutdown")
struct EventLoopShutdownTests {
    final class Busy: WebSocketServerDelegate, WebSocketConnectionHandler {
        let closes: EventQueue<UInt16?>
        init(closes: EventQueue<UInt16?>) { self.closes = closes }
        func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
            connection.handler = self
        }
        func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {}
        func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
            #expect(!connection.send(text: "too late"))
            let scheduler = EventLoopScheduler(eventLoop: connection.eventLoop)
            scheduler.schedule(after: scheduler.now) { Issue.record("timer ran after shutdown") }
            scheduler.schedule { Issue.record("work ran after shutdown") }
            connection.eventLoop.execute { Issue.record("handed-in work ran after shutdown") }
            closes.push(code?.rawValue)
        }
    }

    @Test func handlersReactingToShutdownClosesAreHarmless() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let closes = EventQueue<UInt16?>()
        let port = try await onLoop(serverLoop) {
            let server = WebSocketServer(eventLoop: serverLoop, delegate: Busy(closes: closes))
            try server.start()
            return server.port
        }
        let events = EventQueue<(Int, ConnectionEvent)>()
        try await onLoop(clientLoop) {
            let client = WebSocketClient(eventLoop: clientLoop)
            for index in 0..<5 {
                client.connect(host: "127.0.0.1", port: port, handler: RecordingHandler(tagged: events, tag: index))
            }
        }
        _ = try await events.next(5, "opens")
        serverLoop.shutdown()
        let codes = try await closes.next(5, "server-side closes")
        #expect(codes.count == 5)
    }
}
