/// Who waits for room in one connection's outbound queue (paced subscribers, history
/// replays): the connection's handler wakes them the moment the queue drains, in the order
/// they began to wait. Confined to the hub's event loop.
final class OutboundRoom {
    private var waiters: [() -> Void] = []

    init() {}

    /// Runs `resume` once the queue next drains.
    func wait(_ resume: @escaping () -> Void) {
        waiters.append(resume)
    }

    /// The queue has drained: every waiter resumes (those that begin to wait meanwhile wait
    /// for the next drain).
    func drained() {
        guard !waiters.isEmpty else { return }
        let resumed = waiters
        waiters = []
        for resume in resumed { resume() }
    }
}
