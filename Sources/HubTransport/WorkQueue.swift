/// Work handed to an event loop from any thread: a lock-protected queue plus the loop's
/// wake-up (`lws_cancel_service`, the only lws call allowed off the loop thread, made
/// under the lock so that it never races with the context's destruction).
///
/// One wake-up is requested per batch: later work joins the batch until the loop takes
/// it with ``takePending(into:)``.
final class WorkQueue: Sendable {
    /// One piece of handed-in work, with what to do if the loop stops before running it.
    struct Work: Sendable {
        /// Runs the work on the loop thread.
        var run: @Sendable () -> Void
        /// Called instead of ``run`` when the loop has stopped.
        var drop: (@Sendable () -> Void)?
        /// Whether it counts as input for write coalescing (more of it may follow at
        /// once, so its writes may wait for the next); an answer to this loop's own
        /// request (a store's commit) does not: its writes go out at the end of the pass.
        var isInput = true
    }

    private enum Lifecycle {
        case starting, running, stopped
    }

    private struct State {
        var lifecycle = Lifecycle.starting
        var waker: (@Sendable () -> Void)?
        var pending: [Work] = []
        var wakeRequested = false
    }

    private let state = LockedState(State())

    init() {}

    /// The loop runs: `waker` wakes its thread from now on (at once if work is waiting).
    func open(waker: @escaping @Sendable () -> Void) {
        state.withLock { state in
            state.waker = waker
            state.lifecycle = .running
            if !state.pending.isEmpty {
                state.wakeRequested = true
                waker()
            }
        }
    }

    /// Queues `work` and wakes the loop unless a wake-up is pending already. Returns
    /// `false` (and queues nothing) when the loop has stopped.
    func enqueue(_ work: Work) -> Bool {
        state.withLock { state in
            guard state.lifecycle != .stopped else { return false }
            state.pending.append(work)
            if !state.wakeRequested, let waker = state.waker {
                state.wakeRequested = true
                waker()
            }
            return true
        }
    }

    /// Wakes the loop (for work it queued itself).
    func wake() {
        state.withLock { state in
            guard let waker = state.waker else { return }
            state.wakeRequested = true
            waker()
        }
    }

    /// Whether a wake-up is on its way to the loop (work waits to run).
    var isWakePending: Bool {
        state.withLock { $0.wakeRequested }
    }

    /// Moves the queued work into `batch` (which must be empty) for the loop to run;
    /// work handed in from now on requests a new wake-up.
    func takePending(into batch: inout [Work]) {
        state.withLock { state in
            state.wakeRequested = false
            swap(&state.pending, &batch)
        }
    }

    /// The loop stops: refuses new work and returns what was queued (to run last).
    func close() -> [Work] {
        state.withLock { state in
            state.lifecycle = .stopped
            let pending = state.pending
            state.pending = []
            return pending
        }
    }

    /// Forgets the waker (before its context is destroyed): wake-ups do nothing from now on.
    func detachWaker() {
        state.withLock { $0.waker = nil }
    }
}
