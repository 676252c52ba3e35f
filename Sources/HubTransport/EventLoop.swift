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
    /// How the loop's libwebsockets context is created.
    public struct Configuration: Sendable {
        /// The service thread's name (for debuggers and logs).
        public var name: String
        /// The size of lws's per-thread descriptor table; `0` uses the process's
        /// `RLIMIT_NOFILE` capped at 65,536.
        public var maximumFileDescriptors: Int
        /// Whether lws checks that inbound text messages are valid UTF-8 and closes with
        /// 1007 when they are not (an lws context option, so it holds for every endpoint).
        public var validatesUTF8: Bool

        /// Creates a configuration.
        public init(name: String = "hub-event-loop", maximumFileDescriptors: Int = 0, validatesUTF8: Bool = true) {
            self.name = name
            self.maximumFileDescriptors = maximumFileDescriptors
            self.validatesUTF8 = validatesUTF8
        }
    }

    /// Work handed in from any thread, with what to do if the loop is gone before it runs.
    private struct RemoteWork {
        var run: @Sendable () -> Void
        var drop: (@Sendable () -> Void)?
    }

    /// The lws context pointer, shareable so that other threads can `lws_cancel_service` it.
    private struct ContextPointer: @unchecked Sendable {
        let raw: OpaquePointer
    }

    private enum Lifecycle {
        case starting, running, stopped
    }

    /// State shared between threads (guarded by the mutex).
    private struct Shared {
        var lifecycle = Lifecycle.starting
        var context: ContextPointer?
        var pending: [RemoteWork] = []
        var wakeRequested = false
    }

    /// The loop's configuration.
    public let configuration: Configuration
    private let logger: Logger
    private let shared = LockedState(Shared())
    private let stopRequested = Atomic<Bool>(false)
    private let exitCondition = NSCondition()
    private var hasExited = false  // guarded by exitCondition
    private var startError: TransportError?  // written before the ready signal

    // Loop-confined state.
    private var loopThread: pthread_t = pthread_t()
    private var context: OpaquePointer?
    /// Set while the context is being destroyed: no new timers, listeners or connections.
    private(set) var isDestroying = false
    // @exclusivity(unchecked) on the hot fields below: this object is confined to its
    // event loop and nothing re-enters it while one of these accesses is open, so the dynamic
    // check (a runtime call per access, the release builds once skipped it by a flag) only costs.
    @exclusivity(unchecked) private var localWork = Deque<() -> Void>()
    private var drained: [RemoteWork] = []
    private var timers = TimerQueue()
    private var timerHandle: UnsafeMutablePointer<cws_timer_t>?
    private var armedDeadline: Int64?
    private var retainedEndpoints: [AnyObject] = []
    @exclusivity(unchecked) private var writeScratch: [UInt8] = []
    /// Ports the loop's servers listen on (lws would silently share a listener between
    /// vhosts of one context on the same port).
    var listeningPorts: Set<Int> = []
    @exclusivity(unchecked) private var spareBuffers: [[UInt8]] = []
    private static let spareBufferLimit = 256
    private static let spareBufferMaximumCapacity = 128 << 10
    private var ownedCStrings: [UnsafeMutablePointer<CChar>] = []
    private var ownedAllocations: [UnsafeMutableRawPointer] = []
    private var loopProtocols: UnsafeMutablePointer<lws_protocols>?

    /// Starts the loop thread and creates its libwebsockets context.
    ///
    /// - Throws: ``TransportError`` with code `context_creation_failed` when lws refuses.
    public init(configuration: Configuration = Configuration()) throws {
        _ = LibWebSocketsLogging.installDefault
        self.configuration = configuration
        var logger = Logger(label: "hub.transport.loop")
        logger[metadataKey: "loop"] = "\(configuration.name)"
        self.logger = logger
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            self.run(ready: ready)
        }
        thread.name = configuration.name
        thread.start()
        ready.wait()
        if let startError {
            waitForExit()
            throw startError
        }
    }

    // MARK: - Thread confinement

    /// Whether the caller runs on this loop's service thread.
    public var inEventLoop: Bool {
        pthread_equal(pthread_self(), loopThread) != 0
    }

    /// Traps unless called on the loop thread.
    public func preconditionInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(inEventLoop, "must be called on the event loop thread", file: file, line: line)
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
        enqueue(RemoteWork(run: work, drop: nil))
    }

    /// Runs `body` on the loop thread and returns its result.
    ///
    /// - Throws: what `body` throws, or ``TransportError`` `event_loop_shut_down` if the
    ///   loop stopped before running it.
    @discardableResult
    public func submit<T: Sendable>(_ body: @Sendable @escaping () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            enqueue(RemoteWork(
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
        if wasEmpty { wake() }
    }

    private func enqueue(_ work: RemoteWork) {
        let accepted: Bool = shared.withLock { shared in
            guard shared.lifecycle != .stopped else { return false }
            shared.pending.append(work)
            if !shared.wakeRequested, let context = shared.context {
                shared.wakeRequested = true
                lws_cancel_service(context.raw)
            }
            return true
        }
        if !accepted {
            logger.debug("work handed to a stopped event loop was dropped")
            work.drop?()
        }
    }

    /// Wakes the service thread (the only lws call allowed from other threads).
    private func wake() {
        shared.withLock { shared in
            if let context = shared.context {
                shared.wakeRequested = true
                lws_cancel_service(context.raw)
            }
        }
    }

    /// Runs the queued work; called on `LWS_CALLBACK_EVENT_WAIT_CANCELLED`.
    func drainWork() {
        shared.withLock { shared in
            shared.wakeRequested = false
            swap(&shared.pending, &drained)
        }
        for work in drained { work.run() }
        drained.removeAll(keepingCapacity: true)
        var budget = localWork.count
        while budget > 0, let work = localWork.popFirst() {
            budget -= 1
            work()
        }
        if !localWork.isEmpty { wake() }
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
        guard !isDestroying, let context, let timerHandle else { return }
        guard let next = timers.nextDeadline else {
            if armedDeadline != nil {
                cws_timer_cancel(timerHandle)
                armedDeadline = nil
            }
            return
        }
        if armedDeadline == next { return }
        armedDeadline = next
        let delay = next - EventLoop.monotonicNanoseconds()
        let microseconds = delay <= 0 ? 0 : (delay + 999) / 1000
        cws_timer_schedule(context, timerHandle, cwsTimerFired, lws_usec_t(microseconds))
    }

    /// Runs the due timers; called by the lws sorted-usec-list callback.
    func fireTimers() {
        armedDeadline = nil
        let now = EventLoop.monotonicNanoseconds()
        let mark = timers.sequenceMark
        while let action = timers.popDue(now: now, before: mark) {
            action()
        }
        armTimer()
    }

    // MARK: - Shared scratch space

    /// An empty buffer for assembling one write (reused across connections: a write is
    /// complete, or copied by lws, when `lws_write` returns). Loop thread only.
    func takeWriteScratch() -> [UInt8] {
        var buffer: [UInt8] = []
        swap(&buffer, &writeScratch)
        buffer.removeAll(keepingCapacity: true)
        return buffer
    }

    /// An empty byte buffer for an outbound queue entry, recycled across the loop's
    /// connections so that queueing does not allocate in the steady state.
    func takeBuffer() -> [UInt8] {
        spareBuffers.popLast() ?? []
    }

    /// Returns a buffer taken with ``takeBuffer()`` once its bytes are written. The pool
    /// is bounded (count and capacity), so memory stays bounded per loop.
    func recycleBuffer(_ buffer: inout [UInt8]) {
        guard spareBuffers.count < EventLoop.spareBufferLimit,
            buffer.capacity <= EventLoop.spareBufferMaximumCapacity
        else { return }
        buffer.removeAll(keepingCapacity: true)
        var taken: [UInt8] = []
        swap(&taken, &buffer)
        spareBuffers.append(taken)
    }

    /// Gives the scratch buffer back for the next write.
    func returnWriteScratch(_ buffer: inout [UInt8]) {
        if buffer.capacity <= 256 << 10 { swap(&buffer, &writeScratch) }
    }

    // MARK: - Resources kept for the context's life

    /// The loop's lws context. Loop thread only.
    var lwsContext: OpaquePointer {
        preconditionInEventLoop()
        return context!
    }

    /// Keeps `object` alive until the context is destroyed (lws holds pointers to it).
    func retainUntilShutdown(_ object: AnyObject) {
        retainedEndpoints.append(object)
    }

    /// A C copy of `string` that lives as long as the context.
    func cString(_ string: String) -> UnsafeMutablePointer<CChar> {
        let copy = strdup(string)!
        ownedCStrings.append(copy)
        return copy
    }

    /// Zeroed memory for `count` values of `T` that lives as long as the context.
    func allocate<T>(_ type: T.Type, count: Int) -> UnsafeMutablePointer<T> {
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<T>.stride * count, alignment: MemoryLayout<T>.alignment)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<T>.stride * count)
        ownedAllocations.append(raw)
        return raw.bindMemory(to: T.self, capacity: count)
    }

    // MARK: - Shutdown

    /// Stops the loop: the context (and every connection on it) is destroyed on the
    /// service thread, then this call returns. Idempotent; callable from any thread.
    /// Called on the loop thread itself, it only requests the stop and returns.
    public func shutdown() {
        stopRequested.store(true, ordering: .releasing)
        wake()
        if inEventLoop { return }
        waitForExit()
    }

    private func waitForExit() {
        exitCondition.lock()
        while !hasExited { exitCondition.wait() }
        exitCondition.unlock()
    }

    private func signalExit() {
        exitCondition.lock()
        hasExited = true
        exitCondition.broadcast()
        exitCondition.unlock()
    }

    // MARK: - The service thread

    private func run(ready: DispatchSemaphore) {
        loopThread = pthread_self()
        let protocols = allocate(lws_protocols.self, count: 2)
        protocols[0].name = UnsafePointer(cString("hub-event-loop"))
        protocols[0].callback = cwsLoopCallback
        loopProtocols = protocols

        var info = lws_context_creation_info()
        info.port = cws_context_port_no_listen
        info.protocols = UnsafePointer(protocols)
        info.user = Unmanaged.passUnretained(self).toOpaque()
        info.fd_limit_per_thread = UInt32(EventLoop.descriptorLimit(configuration.maximumFileDescriptors))
        if configuration.validatesUTF8 {
            info.options |= cws_option_validate_utf8
        }
        guard let context = EventLoop.createContext(&info) else {
            startError = TransportError(code: .contextCreationFailed, message: "lws_create_context failed")
            shared.withLock { $0.lifecycle = .stopped }
            releaseResources()
            ready.signal()
            signalExit()
            return
        }
        self.context = context
        let timerHandle = allocate(cws_timer_t.self, count: 1)
        cws_timer_init(timerHandle, Unmanaged.passUnretained(self).toOpaque())
        self.timerHandle = timerHandle
        let sharedContext = ContextPointer(raw: context)
        shared.withLock { shared in
            shared.context = sharedContext
            shared.lifecycle = .running
            if !shared.pending.isEmpty {
                shared.wakeRequested = true
                lws_cancel_service(context)
            }
        }
        ready.signal()
        logger.debug("event loop started")

        while !stopRequested.load(ordering: .acquiring) {
            if lws_service(context, 0) < 0 { break }
        }

        // Run what was handed in before the stop, then refuse more and destroy.
        let last = shared.withLock { shared -> [RemoteWork] in
            shared.lifecycle = .stopped
            let pending = shared.pending
            shared.pending = []
            return pending
        }
        for work in last { work.run() }
        var budget = localWork.count
        while budget > 0, let work = localWork.popFirst() {
            budget -= 1
            work()
        }
        localWork.removeAll()
        cws_timer_cancel(timerHandle)
        shared.withLock { $0.context = nil }
        isDestroying = true
        lws_context_destroy(context)
        self.context = nil
        timers.removeAll()
        releaseResources()
        logger.debug("event loop stopped")
        signalExit()
    }

    /// Whether a context of this process was created with `DO_SSL_GLOBAL_INIT`
    /// (guarded by the mutex, which also serialises context creation).
    private static let sslLibraryInitialised = Mutex(false)

    /// Creates an lws context; the process's first one with `DO_SSL_GLOBAL_INIT`.
    ///
    /// lws 4.1.6 keeps the OpenSSL ex-data index through which its verify callbacks find
    /// a connection in a process-wide variable and allocates a new one on every context
    /// created with `DO_SSL_GLOBAL_INIT`: a second such context, created while another
    /// loop's client is in a TLS handshake, makes that handshake fail ("can't get wsi
    /// from ssl privdata"). So only the first context initialises the library; TLS
    /// vhosts carry the option in their own creation info, which is what lws checks to
    /// give them an SSL_CTX. The cost: lws frees TLS vhosts' SSL_CTXs at destroy only in
    /// a context with the option, so a later loop that used TLS leaks them (a few KB per
    /// TLS server or CA file) when it shuts down.
    private static func createContext(_ info: inout lws_context_creation_info) -> OpaquePointer? {
        let created = sslLibraryInitialised.withLock { initialised -> ContextPointer? in
            if !initialised { info.options |= cws_option_do_ssl_global_init }
            guard let raw = lws_create_context(&info) else { return nil }
            initialised = true
            return ContextPointer(raw: raw)
        }
        return created?.raw
    }

    private func releaseResources() {
        retainedEndpoints.removeAll()
        for string in ownedCStrings { free(string) }
        ownedCStrings.removeAll()
        for raw in ownedAllocations { raw.deallocate() }
        ownedAllocations.removeAll()
        loopProtocols = nil
        timerHandle = nil
    }

    private static func descriptorLimit(_ configured: Int) -> Int {
        if configured > 0 { return configured }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            return Int(min(limit.rlim_cur, 65_536))
        }
        return 65_536
    }
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
