import CWebsockets
import DequeModule
import Foundation
import Logging
import Synchronization

// The service thread: the lws context created on it, serviced on libev until the
// loop shuts down, then destroyed there.
extension EventLoop {
    // MARK: - The service thread

    func run() {
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
    func serviceOnLibev(
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
        if now - loadSampledAt >= EventLoop.loadSampleInterval {
            loadSampledAt = now
            if !threadLoadTried {
                threadLoadTried = true
                threadLoad = ThreadLoad()
            }
            if let busy = threadLoad?.sample(now: now) { coalescing.noteLoopLoad(busy) }
        }
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
    func kickLibWebSockets(_ context: OpaquePointer, now: Int64) {
        lastKick = now
        lws_cancel_service(context)
    }

    /// Sleeps the loop thread (less than a millisecond, before a timer lws cannot wait for).
    static func sleep(nanoseconds: Int64) {
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
