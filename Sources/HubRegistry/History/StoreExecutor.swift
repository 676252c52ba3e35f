import HubLoop

/// Runs work on the hub's event loop from another thread: a store whose I/O runs on
/// threads of its own hands its results back to the loop through it (the event
/// loop's work queue), so that every ``SubjectLog`` completion runs on the loop. A
/// store's results carried back on it are ``LoopBound`` to it.
public protocol StoreExecutor: LoopExecutor {
    /// Runs `work` on the hub's event loop, soon, in the order of the calls.
    func execute(_ work: @Sendable @escaping () -> Void)

    /// Called on the loop: runs `work` on the loop once the events at hand are handled
    /// (the event loop's local queue), for work a store gives itself, such as committing
    /// what the loop's pass appended as one group.
    func executeSoon(_ work: @Sendable @escaping () -> Void)

    /// Called on the loop: runs `work` on the loop at the end of the current pass, after
    /// its events and before it writes (so that the acks `work` queues go out with that
    /// pass's writes), such as committing the value a lone publisher waits for.
    func executeAtEndOfPass(_ work: @Sendable @escaping () -> Void)

    /// Called on the loop by work that answered clients waiting on the store (a commit's
    /// acks): what it queued is written at the end of this pass, not held back for the
    /// loop's write coalescing, as the answers ``execute(_:)`` brings back are.
    func answered()
}

extension StoreExecutor {
    /// By default, ``execute(_:)``.
    public func executeSoon(_ work: @Sendable @escaping () -> Void) {
        execute(work)
    }

    /// By default, ``executeSoon(_:)``.
    public func executeAtEndOfPass(_ work: @Sendable @escaping () -> Void) {
        executeSoon(work)
    }

    /// By default, nothing.
    public func answered() {}
}
