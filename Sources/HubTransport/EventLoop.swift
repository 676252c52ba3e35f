import CWebsockets
import DequeModule
import Foundation
import Logging
import Synchronization

/// One libwebsockets context serviced on one dedicated thread: the hub's event loop.
///
/// Every object that uses the loop's context (servers, clients, connections, timers)
/// is confined to the loop thread, as a SwiftNIO channel is confined to its event loop.
/// Other threads hand work in with ``execute(_:)`` (a mutex-protected queue plus
/// `lws_cancel_service`, drained on `LWS_CALLBACK_EVENT_WAIT_CANCELLED`).
///
/// Call ``shutdown()`` when done: the loop keeps itself (and every endpoint started on
/// it) alive until then.
public final class EventLoop: @unchecked Sendable {
    /// The loop's configuration.
    public let configuration: Configuration
    /// The logger the loop, and by default its servers, clients and connections, log to.
    public let logger: Logger

    private let thread = ServiceThread()
    private let remoteWork = WorkQueue()
    private let stopRequested = Atomic<Bool>(false)
    private var startError: TransportError?  // written before the ready signal

    // Loop-confined state.
    private var context: OpaquePointer?
    /// The libev loop lws runs on (nil: lws's own `poll`).
    private var eventLibraryLoop: UnsafeMutableRawPointer?
    /// How the loop waits for its sockets (``Configuration/eventLibrary``, or `.poll` when
    /// lws could not load libev); `waitsWithEpoll` whether libev chose epoll. Written
    /// before the loop reports ready.
    public private(set) var eventLibrary: Configuration.EventLibrary = .poll
    public private(set) var waitsWithEpoll = false
    /// On libev: the timer that wakes the loop for its next deadline, the deadline it is
    /// armed for, and when lws last had a pass of its own timers (see ``kickLibWebSockets()``).
    private var wakeup: UnsafeMutablePointer<cws_ev_wakeup_t>?
    @exclusivity(unchecked) private var armedWake: Int64 = .max
    @exclusivity(unchecked) private var lastKick: Int64 = 0
    /// Whether lws should service its own timers at the end of this pass: a connection
    /// was set to close through them (``requestLibWebSocketsService()``).
    @exclusivity(unchecked) private var kickRequested = false
    /// Until when pending writes wait for more input (``WriteCoalescing/Decision/waitUntil(_:)``).
    @exclusivity(unchecked) private var writesWaitUntil: Int64?
    /// How often lws's own timers (pings, timeouts) are serviced at least, on libev.
    static let libWebSocketsTimerInterval: Int64 = 100_000_000
    /// Set while the context is being destroyed: no new timers, listeners or connections.
    private(set) var isDestroying = false
    // @exclusivity(unchecked) on the hot fields: they are loop-confined and no access to
    // one of them is open while work, a timer action or lws runs, so the dynamic check
    // (a runtime call per access) would only cost.
    @exclusivity(unchecked) private var localWork = Deque<() -> Void>()
    @exclusivity(unchecked) private var endOfPassWork = Deque<() -> Void>()
    @exclusivity(unchecked) private var drained: [WorkQueue.Work] = []
    @exclusivity(unchecked) private var timers = TimerQueue()
    @exclusivity(unchecked) private var timer = LoopTimer()
    private var timerHandle: UnsafeMutablePointer<cws_timer_t>?
    /// What lws points at for the context's life (protocol tables, names, endpoints).
    let arena = ContextArena()
    /// Buffers recycled across the loop's connections.
    @exclusivity(unchecked) var buffers = BufferPool()
    /// The ports the loop's servers listen on.
    var ports = PortRegistry()
    /// The endpoint that accepted each server connection of the loop, from lws's creation
    /// of its wsi to its destruction (``WebSocketCallbackDispatcher``).
    var acceptors: [OpaquePointer: EndpointReference] = [:]
    /// Service passes (`lws_service` calls) so far, for tests of how the loop waits.
    @exclusivity(unchecked) private(set) var servicePasses = 0
    /// Events handled so far (connection and endpoint callbacks, handed-in work, timers):
    /// a pass that changed it was busy, and more may be ready at once.
    @exclusivity(unchecked) private var activity: UInt64 = 0
    /// Input handled so far (inbound chunks, handed-in work): while a pass handles some,
    /// writes may wait for the next pass (``WriteCoalescing``).
    @exclusivity(unchecked) private var inputs: UInt64 = 0
    /// Connections with messages queued since their last write, written at the end of the pass.
    @exclusivity(unchecked) private var flushQueue: [WebSocketConnection] = []
    @exclusivity(unchecked) private var flushing: [WebSocketConnection] = []
    /// Writers besides the connections that write when the loop writes (``writeWithConnections(_:)``).
    @exclusivity(unchecked) private var writers: [any LoopWriter] = []
    @exclusivity(unchecked) private var writing: [any LoopWriter] = []
    @exclusivity(unchecked) private var coalescing: WriteCoalescing
    /// Flushes so far (each writes every connection queued since the last), for tests.
    @exclusivity(unchecked) private(set) var flushes = 0
    /// Messages queued since the last write (``noteMessageQueued()``).
    @exclusivity(unchecked) private var queuedMessages = 0
    /// Whether the pending writes go out at the end of this pass (``writeAtEndOfPass()``).
    @exclusivity(unchecked) private var flushPromptly = false
    /// The thread's CPU time at the end of the previous pass (``Configuration/measuresPassCPUTime``).
    @exclusivity(unchecked) private var passCPUMark: Int64 = 0
    /// The most CPU time one pass took since ``takeLongestPassCPUTime()`` last read it.
    private let longestPassCPU = Atomic<Int64>(0)

    /// Starts the loop thread and creates its libwebsockets context.
    ///
    /// - Parameters:
    ///   - configuration: how the context is created.
    ///   - logger: where the loop logs (with the loop's name as `loop` metadata); its
    ///     servers and clients log there too unless given their own.
    /// - Throws: ``TransportError`` with code `context_creation_failed` when lws refuses.
    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "hub.transport")) throws {
        _ = LibWebSocketsLogging.installDefault
        self.configuration = configuration
        coalescing = WriteCoalescing(
            maximumDelay: configuration.writeCoalescingDelay.nanoseconds,
            streamingDelay: configuration.writeCoalescingStreamingDelay.nanoseconds)
        var logger = logger
        logger[metadataKey: "loop"] = "\(configuration.name)"
        self.logger = logger
        thread.start(name: configuration.name) { [self] in
            self.run()
        }
        if let startError {
            thread.waitForExit()
            throw startError
        }
    }

    // MARK: - Thread confinement

    /// Whether the caller runs on this loop's service thread.
    public var inEventLoop: Bool {
        thread.isCurrent
    }

    /// Traps unless called on the loop thread.
    public func preconditionInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(inEventLoop, "must be called on the event loop thread", file: file, line: line)
    }

    /// The loop whose context `wsi` belongs to (the context's user pointer).
    static func owning(_ wsi: OpaquePointer) -> EventLoop? {
        guard let context = lws_get_context(wsi), let raw = lws_context_user(context) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(raw).takeUnretainedValue()
    }

    /// In debug builds, traps unless called on the thread of the loop that owns `wsi`'s
    /// context: libwebsockets is not thread-safe across a context (only
    /// `lws_cancel_service` may be called from another thread).
    @inline(__always)
    static func assertOwnerThread(of wsi: OpaquePointer, file: StaticString = #fileID, line: UInt = #line) {
        assert(owning(wsi)?.inEventLoop ?? true, "a libwebsockets connection was used off its event loop's thread", file: file, line: line)
    }

    /// Traps when called on the loop thread.
    public func preconditionNotInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(!inEventLoop, "must not be called on the event loop thread", file: file, line: line)
    }

    // MARK: - Handing work in

    /// Runs `work` on the loop thread, after the work already queued. Callable from any thread.
    ///
    /// Work handed in after ``shutdown()`` has finished the loop is dropped.
    public func execute(_ work: @Sendable @escaping () -> Void) {
        enqueue(WorkQueue.Work(run: work, drop: nil))
    }

    /// Runs `work` on the loop thread like ``execute(_:)``, for an answer to something
    /// the loop asked another thread for (a store's commit): what it writes is not held
    /// back for write coalescing (``Configuration/writeCoalescingDelay``) but goes out at
    /// the end of the pass, so an acknowledgement waits for the disk only.
    public func executeAnswer(_ work: @Sendable @escaping () -> Void) {
        enqueue(WorkQueue.Work(run: work, drop: nil, isInput: false))
    }

    /// Runs `body` on the loop thread and returns its result.
    ///
    /// - Throws: what `body` throws, or ``TransportError`` `event_loop_shut_down` if the
    ///   loop stopped before running it.
    @discardableResult
    public func submit<T: Sendable>(_ body: @Sendable @escaping () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            enqueue(WorkQueue.Work(
                run: { continuation.resume(with: Result { try body() }) },
                drop: {
                    continuation.resume(throwing: TransportError(
                        code: .eventLoopShutDown, message: "the event loop shut down before the work ran"))
                }))
        }
    }

    /// Queues `work` to run on the loop soon, after what is already queued locally.
    /// Must be called on the loop thread; `work` need not be `Sendable`.
    public func executeSoon(_ work: @escaping () -> Void) {
        preconditionInEventLoop()
        let wasEmpty = localWork.isEmpty
        localWork.append(work)
        // A non-empty queue already has a wake pending (drainWork re-wakes for leftovers).
        if wasEmpty { remoteWork.wake() }
    }

    /// Queues `work` to run at the end of the current service pass, after its events and
    /// timers and before it writes what its connections queued (so that what `work`
    /// queues goes out with them): a store's commit of the value a lone publisher waits
    /// for. Work queued while that runs waits for the end of the next pass, which then
    /// polls without waiting. Must be called on the loop thread.
    ///
    /// Unlike ``executeSoon(_:)`` it wakes nothing on libev (the loop is not waiting while
    /// its own thread runs), and it runs in this pass rather than the next: a wake-up
    /// through lws's event pipe costs a write, a read and a pass of lws. lws's own `poll`
    /// runs the timers before it waits in the same call, so there the first work queued
    /// still wakes it.
    public func executeAtEndOfPass(_ work: @escaping () -> Void) {
        preconditionInEventLoop()
        let wasEmpty = endOfPassWork.isEmpty
        endOfPassWork.append(work)
        if wasEmpty, eventLibraryLoop == nil { remoteWork.wake() }
    }

    /// Has lws service its own timers at the end of this pass (on libev it otherwise does
    /// so only after a socket event, or at the periodic kick): a connection set to close
    /// through them (`LWS_TO_KILL_ASYNC`) outside a socket's callback closes now. Must be
    /// called on the loop thread.
    func requestLibWebSocketsService() {
        kickRequested = true
    }

    private func enqueue(_ work: WorkQueue.Work) {
        if !remoteWork.enqueue(work) {
            logger.debug("work handed to a stopped event loop was dropped")
            work.drop?()
        }
    }

    /// Notes that the current service pass handled an event.
    @inline(__always)
    func noteActivity() {
        activity &+= 1
    }

    /// Notes that the current service pass handled input (it may produce more output soon).
    @inline(__always)
    func noteInput() {
        activity &+= 1
        inputs &+= 1
    }

    /// Writes `connection`'s queue at the end of the service pass (``WebSocketConnection/flush()``).
    @inline(__always)
    func scheduleFlush(_ connection: WebSocketConnection) {
        flushQueue.append(connection)
    }

    /// Notes that a message was queued for a connection (or an element of a coalescing
    /// one), here or through a ``LoopWriter``: how heavy a stream is decides how long its
    /// writes wait (``WriteCoalescing``). Must be called on the loop thread.
    @inline(__always)
    public func noteMessageQueued() {
        queuedMessages &+= 1
    }

    /// Writes at the end of this pass, whatever the coalescing: a connection has queued
    /// a full batch, and holding more back would only grow its queue; or what is queued
    /// was held back already (on another loop). Must be called on the loop thread.
    @inline(__always)
    public func writeAtEndOfPass() {
        flushPromptly = true
    }

    /// Makes `writer` write when this loop next writes what its connections queued: at
    /// the end of this pass, or later while a stream's writes are held back
    /// (``WriteCoalescing``), its ``LoopWriter/pendingConnections`` counting as
    /// connections waiting to be written. Once per write: a writer with more to write
    /// afterwards registers again. Must be called on the loop thread.
    public func writeWithConnections(_ writer: any LoopWriter) {
        preconditionInEventLoop()
        writers.append(writer)
    }

    /// Whether connections or writers wait for the loop's next write.
    private var hasPendingWrites: Bool { !flushQueue.isEmpty || !writers.isEmpty }

    /// Connections waiting for the next write, the writers' included.
    var pendingConnections: Int {
        var count = flushQueue.count
        for writer in writers { count += writer.pendingConnections }
        return count
    }

    /// Decides after a pass that left writes pending whether to write now.
    private func decideAfterPass(handledInput: Bool, now: Int64) -> WriteCoalescing.Decision {
        coalescing.afterPass(
            handledInput: handledInput, now: now, pendingConnections: pendingConnections, queuedMessages: queuedMessages,
            mustWrite: flushPromptly)
    }

    /// Writes the queues of the connections scheduled so far, then lets the writers write.
    /// Connections and writers scheduled while it runs (a handler that queues more when its
    /// queue drained) wait for the next pass.
    private func flushConnections() {
        flushes &+= 1
        queuedMessages = 0
        flushPromptly = false
        swap(&flushQueue, &flushing)
        swap(&writers, &writing)
        for connection in flushing { connection.flush() }
        flushing.removeAll(keepingCapacity: true)
        for writer in writing { writer.write() }
        writing.removeAll(keepingCapacity: true)
    }

    /// Runs the queued work; called on `LWS_CALLBACK_EVENT_WAIT_CANCELLED`.
    func drainWork() {
        noteActivity()
        remoteWork.takePending(into: &drained)
        for work in drained {
            if work.isInput { noteInput() }
            work.run()
        }
        drained.removeAll(keepingCapacity: true)
        runLocalWork()
        if !localWork.isEmpty { remoteWork.wake() }
    }

    /// Runs the local work queued before this pass (work it queues waits for the next).
    private func runLocalWork() {
        var budget = localWork.count
        while budget > 0, let work = localWork.popFirst() {
            budget -= 1
            work()
        }
    }

    /// Runs the work queued for the end of this pass (work it queues waits for the next).
    private func runEndOfPassWork() {
        guard !endOfPassWork.isEmpty else { return }
        noteActivity()
        var budget = endOfPassWork.count
        while budget > 0, let work = endOfPassWork.popFirst() {
            budget -= 1
            work()
        }
    }

    // MARK: - Pass CPU time

    /// The most CPU time (the loop thread's) one service pass took since the previous
    /// call, which starts a new window; `nil` unless ``Configuration/measuresPassCPUTime``.
    /// A pass is everything between two waits: the sockets' events, handed-in work,
    /// timers and writes. Callable from any thread.
    public func takeLongestPassCPUTime() -> Duration? {
        guard configuration.measuresPassCPUTime else { return nil }
        return .nanoseconds(longestPassCPU.exchange(0, ordering: .relaxed))
    }

    /// Ends a pass's CPU measurement (waiting costs no CPU: the time since the previous
    /// pass ended is this pass's).
    @inline(__always)
    private func notePassEnded() {
        guard configuration.measuresPassCPUTime else { return }
        let now = cws_thread_cpu_nanoseconds()
        let spent = now - passCPUMark
        passCPUMark = now
        var current = longestPassCPU.load(ordering: .relaxed)
        while spent > current {
            let (exchanged, original) = longestPassCPU.compareExchange(
                expected: current, desired: spent, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
    }

    // MARK: - Timers

    /// The loop's monotonic clock in nanoseconds (`CLOCK_MONOTONIC`).
    public static func monotonicNanoseconds() -> Int64 {
        cws_monotonic_nanoseconds()
    }

    /// Schedules `action` at `deadline` (monotonic nanoseconds), repeating every
    /// `interval` nanoseconds when given. Loop thread only.
    func scheduleTimer(deadline: Int64, interval: Int64?, _ action: @escaping () -> Void) -> TimerQueue.Entry {
        preconditionInEventLoop()
        let entry = timers.insert(deadline: deadline, interval: interval, action: action)
        armTimer()
        return entry
    }

    /// Cancels a timer; idempotent. Loop thread only.
    func cancelTimer(_ entry: TimerQueue.Entry) {
        preconditionInEventLoop()
        timers.cancel(entry)
        armTimer()
    }

    private func armTimer() {
        // On libev the loop wakes itself for the next deadline (``serviceOnLibev``).
        guard !isDestroying, eventLibraryLoop == nil, let context, let timerHandle else { return }
        switch timer.update(nextDeadline: timers.nextDeadline, now: EventLoop.monotonicNanoseconds()) {
        case .keep:
            break
        case .cancel:
            cws_timer_cancel(timerHandle)
        case .arm(let microseconds):
            cws_timer_schedule(context, timerHandle, cwsTimerFired, lws_usec_t(microseconds))
        }
    }

    /// Runs the due timers; called by the lws sorted-usec-list callback.
    func fireTimers() {
        noteActivity()
        timer.fired()
        let now = EventLoop.monotonicNanoseconds()
        let mark = timers.sequenceMark
        while let action = timers.popDue(now: now, before: mark) {
            action()
        }
        armTimer()
    }

    // MARK: - Resources kept for the context's life

    /// The loop's lws context. Loop thread only.
    var lwsContext: OpaquePointer {
        preconditionInEventLoop()
        return context!
    }

    /// Keeps `object` alive until the context is destroyed (lws holds pointers to it).
    func retainUntilShutdown(_ object: AnyObject) {
        arena.retain(object)
    }

    // MARK: - Shutdown

    /// Stops the loop: the context (and every connection on it) is destroyed on the
    /// service thread, then this call returns. Idempotent; callable from any thread.
    /// Called on the loop thread itself, it only requests the stop and returns.
    public func shutdown() {
        stopRequested.store(true, ordering: .releasing)
        remoteWork.wake()
        if inEventLoop { return }
        thread.waitForExit()
    }

    // MARK: - The service thread

    private func run() {
        var info = lws_context_creation_info()
        info.port = cws_context_port_no_listen
        info.protocols = UnsafePointer(arena.protocolTable(name: "hub-event-loop", callback: cwsLoopCallback))
        info.user = Unmanaged.passUnretained(self).toOpaque()
        info.fd_limit_per_thread = UInt32(configuration.descriptorLimit)
        if configuration.eventLibrary == .libev, let loop = cws_ev_loop_new() {
            // lws runs on our libev loop (a "foreign" one): each pass is one ev_run.
            let loops = arena.allocate(UnsafeMutableRawPointer?.self)
            loops[0] = loop
            info.foreign_loops = loops
            info.options |= cws_option_libev
            eventLibraryLoop = loop
        }
        var created = TLSContextSetup.createContext(&info)
        if created == nil, let loop = eventLibraryLoop {
            logger.warning("libwebsockets could not run on libev (is libwebsockets-evlib-ev installed?): using poll")
            info.foreign_loops = nil
            info.options &= ~cws_option_libev
            cws_ev_loop_destroy(loop)
            eventLibraryLoop = nil
            created = TLSContextSetup.createContext(&info)
        }
        if let loop = eventLibraryLoop {
            eventLibrary = .libev
            waitsWithEpoll = cws_ev_backend_is_epoll(loop) != 0
            // Passes are cheap on epoll: while messages stream in, wait for more before writing.
            coalescing.waitsForInput = true
            let wakeup = arena.allocate(cws_ev_wakeup_t.self)
            cws_ev_wakeup_init(wakeup)
            self.wakeup = wakeup
        }
        guard let context = created else {
            startError = TransportError(code: .contextCreationFailed, message: "lws_create_context failed")
            _ = remoteWork.close()
            arena.releaseAll()
            thread.signalReady()
            thread.signalExit()
            return
        }
        self.context = context
        let timerHandle = arena.allocate(cws_timer_t.self)
        cws_timer_init(timerHandle, Unmanaged.passUnretained(self).toOpaque())
        self.timerHandle = timerHandle
        let wakeTarget = ContextPointer(raw: context)
        remoteWork.open { lws_cancel_service(wakeTarget.raw) }
        thread.signalReady()
        logger.debug("event loop started")

        var lastPassWasBusy = true
        if configuration.measuresPassCPUTime { passCPUMark = cws_thread_cpu_nanoseconds() }
        while !stopRequested.load(ordering: .acquiring) {
            if let eventLibraryLoop, let wakeup {
                serviceOnLibev(eventLibraryLoop, wakeup, context)
                continue
            }
            // With writes or end-of-pass work pending the pass must not wait: they are done after it.
            let writesPending = hasPendingWrites || !endOfPassWork.isEmpty
            // lws polls in whole milliseconds: when idle, sleep through a timer's last
            // fraction of one rather than polling with a zero timeout until it is due
            // (while busy, keep servicing: more I/O may be ready).
            if !writesPending, case .sleep(let nanoseconds) = timer.wait(
                now: EventLoop.monotonicNanoseconds(), hasPendingWork: lastPassWasBusy || remoteWork.isWakePending)
            {
                EventLoop.sleep(nanoseconds: nanoseconds)
            }
            let before = activity
            let inputsBefore = inputs
            servicePasses &+= 1
            // A negative timeout makes lws poll without waiting.
            if lws_service(context, writesPending ? -1 : 0) < 0 { break }
            runEndOfPassWork()
            kickRequested = false  // lws_service services its timers every pass
            lastPassWasBusy = activity != before
            if hasPendingWrites,
                decideAfterPass(handledInput: inputs != inputsBefore, now: EventLoop.monotonicNanoseconds()) == .write
            {
                flushConnections()
            }
            notePassEnded()
        }

        // Run what was handed in before the stop, then refuse more and destroy.
        for work in remoteWork.close() { work.run() }
        runLocalWork()
        runEndOfPassWork()
        localWork.removeAll()
        endOfPassWork.removeAll()
        flushQueue.removeAll()
        // What writers hold for other loops goes, as work handed in before the stop did.
        for writer in writers { writer.write() }
        writers.removeAll()
        cws_timer_cancel(timerHandle)
        if let eventLibraryLoop, let wakeup { cws_ev_wakeup_stop(eventLibraryLoop, wakeup) }
        remoteWork.detachWaker()
        isDestroying = true
        lws_context_destroy(context)
        self.context = nil
        if let loop = eventLibraryLoop {
            cws_ev_loop_destroy(loop)
            eventLibraryLoop = nil
        }
        timers.removeAll()
        self.timerHandle = nil
        arena.releaseAll()
        buffers.removeAll()
        logger.debug("event loop stopped")
        thread.signalExit()
    }

    /// One pass on libev: waits (unless writes are pending) until a socket is ready, work
    /// is handed in, or the next deadline, handles what is ready, runs the due timers, then
    /// writes what the pass queued (``WriteCoalescing``).
    private func serviceOnLibev(
        _ loop: UnsafeMutableRawPointer, _ wakeup: UnsafeMutablePointer<cws_ev_wakeup_t>, _ context: OpaquePointer
    ) {
        defer { notePassEnded() }
        // Pending writes make the pass poll without waiting, unless they wait for input;
        // so does work left for the end of this pass.
        let noWait = (hasPendingWrites && writesWaitUntil == nil) || !endOfPassWork.isEmpty
        if !noWait {
            var wake = lastKick &+ EventLoop.libWebSocketsTimerInterval
            if let deadline = timers.nextDeadline { wake = min(wake, deadline) }
            if let writesWaitUntil { wake = min(wake, writesWaitUntil) }
            if wake != armedWake {
                let seconds = Double(max(0, wake - EventLoop.monotonicNanoseconds())) / 1e9
                cws_ev_wakeup_arm(loop, wakeup, seconds)
                armedWake = wake
            }
        }
        let inputsBefore = inputs
        servicePasses &+= 1
        _ = cws_ev_run(loop, noWait ? 1 : 0)
        var now = EventLoop.monotonicNanoseconds()
        if now >= armedWake { armedWake = .max }
        var timersFired = false
        if let deadline = timers.nextDeadline, deadline <= now {
            fireTimers()
            timersFired = true
        }
        runEndOfPassWork()
        now = EventLoop.monotonicNanoseconds()
        if timersFired || kickRequested {
            kickRequested = false
            // What the timers did may need lws's own service (a kill, a paused read).
            kickLibWebSockets(context, now: now)
        } else if now - lastKick >= EventLoop.libWebSocketsTimerInterval {
            kickLibWebSockets(context, now: now)
        }
        writesWaitUntil = nil
        guard hasPendingWrites else { return }
        switch decideAfterPass(handledInput: inputs != inputsBefore, now: now) {
        case .write: flushConnections()
        case .holdBack: break
        case .waitUntil(let deadline): writesWaitUntil = deadline
        }
    }

    /// lws 4.1 on libev services its own timers (pings, timeouts, kills) and forced work
    /// (buffered input) only after it handled a socket event: waking it through its event
    /// pipe makes it do so now.
    private func kickLibWebSockets(_ context: OpaquePointer, now: Int64) {
        lastKick = now
        lws_cancel_service(context)
    }

    /// Sleeps the loop thread (less than a millisecond, before a timer lws cannot wait for).
    private static func sleep(nanoseconds: Int64) {
        var duration = timespec(tv_sec: 0, tv_nsec: Int(nanoseconds))
        var remaining = timespec()
        while nanosleep(&duration, &remaining) != 0, errno == EINTR {
            duration = remaining
        }
    }
}

/// The lws context pointer, shareable so that other threads can `lws_cancel_service` it.
private struct ContextPointer: @unchecked Sendable {
    let raw: OpaquePointer
}

/// The protocol callback of the loop's own vhost: drains handed-in work.
private func cwsLoopCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    guard reason == LWS_CALLBACK_EVENT_WAIT_CANCELLED,
        let wsi, let context = lws_get_context(wsi), let raw = lws_context_user(context)
    else { return 0 }
    Unmanaged<EventLoop>.fromOpaque(raw).takeUnretainedValue().drainWork()
    return 0
}

/// The sorted-usec-list callback of the loop's timer.
private func cwsTimerFired(_ sul: UnsafeMutablePointer<lws_sorted_usec_list_t>?) {
    guard let sul, let raw = cws_timer_user(sul) else { return }
    Unmanaged<EventLoop>.fromOpaque(raw).takeUnretainedValue().fireTimers()
}
