import CWebsockets
import DequeModule
import Foundation
import HubLoop
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

    let thread = ServiceThread()
    let remoteWork = WorkQueue()
    let stopRequested = Atomic<Bool>(false)
    var startError: TransportError?  // written before the ready signal

    // Loop-confined state.
    var context: OpaquePointer?
    /// The libev loop lws runs on (nil: lws's own `poll`).
    var eventLibraryLoop: UnsafeMutableRawPointer?
    /// How the loop waits for its sockets (``Configuration/eventLibrary``, or `.poll` when
    /// lws could not load libev); `waitsWithEpoll` whether libev chose epoll. Written
    /// before the loop reports ready.
    public internal(set) var eventLibrary: Configuration.EventLibrary = .poll
    public internal(set) var waitsWithEpoll = false
    /// On libev: the timer that wakes the loop for its next deadline, the deadline it is
    /// armed for, and when lws last had a pass of its own timers (see ``kickLibWebSockets()``).
    var wakeup: UnsafeMutablePointer<cws_ev_wakeup_t>?
    @exclusivity(unchecked) var armedWake: Int64 = .max
    @exclusivity(unchecked) var lastKick: Int64 = 0
    /// Whether lws should service its own timers at the end of this pass: a connection
    /// was set to close through them (``requestLibWebSocketsService()``).
    @exclusivity(unchecked) var kickRequested = false
    /// Until when pending writes wait for more input (``WriteCoalescing/Decision/waitUntil(_:)``).
    @exclusivity(unchecked) var writesWaitUntil: Int64?
    /// How often lws's own timers (pings, timeouts) are serviced at least, on libev.
    static let libWebSocketsTimerInterval: Int64 = 100_000_000
    /// Set while the context is being destroyed: no new timers, listeners or connections.
    var isDestroying = false
    // @exclusivity(unchecked) on the hot fields: they are loop-confined and no access to
    // one of them is open while work, a timer action or lws runs, so the dynamic check
    // (a runtime call per access) would only cost.
    @exclusivity(unchecked) var localWork = Deque<() -> Void>()
    @exclusivity(unchecked) var endOfPassWork = Deque<() -> Void>()
    @exclusivity(unchecked) var drained: [WorkQueue.Work] = []
    @exclusivity(unchecked) var timers = TimerQueue()
    @exclusivity(unchecked) var timer = LoopTimer()
    var timerHandle: UnsafeMutablePointer<cws_timer_t>?
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
    @exclusivity(unchecked) var servicePasses = 0
    /// Events handled so far (connection and endpoint callbacks, handed-in work, timers):
    /// a pass that changed it was busy, and more may be ready at once.
    @exclusivity(unchecked) var activity: UInt64 = 0
    /// Input handled so far (inbound chunks, handed-in work): while a pass handles some,
    /// writes may wait for the next pass (``WriteCoalescing``).
    @exclusivity(unchecked) var inputs: UInt64 = 0
    /// Connections with messages queued since their last write, written at the end of the pass.
    @exclusivity(unchecked) var flushQueue: [WebSocketConnection] = []
    @exclusivity(unchecked) var flushing: [WebSocketConnection] = []
    /// Writers besides the connections that write when the loop writes (``writeWithConnections(_:)``).
    @exclusivity(unchecked) var writers: [any LoopWriter] = []
    @exclusivity(unchecked) var writing: [any LoopWriter] = []
    @exclusivity(unchecked) var coalescing: WriteCoalescing
    /// Flushes so far (each writes every connection queued since the last), for tests.
    @exclusivity(unchecked) var flushes = 0
    /// Messages queued since the last write (``noteMessageQueued()``).
    @exclusivity(unchecked) var queuedMessages = 0
    /// Whether the pending writes go out at the end of this pass (``writeAtEndOfPass()``).
    @exclusivity(unchecked) var flushPromptly = false
    /// The loop thread's load, sampled every ``loadSampleInterval`` for the write hold
    /// (``WriteCoalescing/noteLoopLoad(_:)``); made on the loop thread, once (`nil` after
    /// the first try where the kernel does not report it).
    @exclusivity(unchecked) var threadLoad: ThreadLoad?
    @exclusivity(unchecked) var threadLoadTried = false
    @exclusivity(unchecked) var loadSampledAt: Int64 = 0
    /// How often the loop samples its thread's load (ns).
    static let loadSampleInterval: Int64 = 50_000_000
    /// The thread's CPU time at the end of the previous pass (``Configuration/measuresPassCPUTime``).
    @exclusivity(unchecked) var passCPUMark: Int64 = 0
    /// The most CPU time one pass took since ``takeLongestPassCPUTime()`` last read it.
    let longestPassCPU = Atomic<Int64>(0)

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
            streamingDelay: configuration.writeCoalescingStreamingDelay.nanoseconds,
            idleLoopDelay: configuration.writeCoalescingIdleLoopDelay.nanoseconds)
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

    func enqueue(_ work: WorkQueue.Work) {
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
}

/// The transport's loop is the loop the hub's stores, its cluster and ``LoopBound`` see.
extension EventLoop: LoopExecutor {}
