/// The one-shot actions an operator has scheduled and not yet seen run, so that it can cancel
/// them all on cancel or completion and leave nothing behind on the scheduler.
///
/// Each action removes itself from the bag when it runs. Confined to one thread.
internal final class ScheduledActions {
    private var pending: [UInt64: any Cancellable] = [:]
    private var nextKey: UInt64 = 0

    init() {}

    /// Whether no action is pending.
    var isEmpty: Bool { pending.isEmpty }

    /// Schedules `action` on `scheduler` at `date` and keeps its cancellable until it runs.
    func schedule<S: Scheduler>(on scheduler: S, after date: SchedulerTime, _ action: @escaping () -> Void) {
        let key = nextKey
        nextKey += 1
        var ran = false
        let cancellable = scheduler.schedule(after: date) { [weak self] in
            ran = true
            self?.pending[key] = nil
            action()
        }
        // An immediate scheduler has already run the action.
        if !ran { pending[key] = cancellable }
    }

    /// Cancels every pending action; idempotent.
    func cancelAll() {
        guard !pending.isEmpty else { return }
        let all = pending
        pending = [:]
        for cancellable in all.values { cancellable.cancel() }
    }
}
