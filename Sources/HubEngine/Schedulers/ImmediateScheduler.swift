/// A scheduler that runs every action at once, on the caller's stack, as Combine's `ImmediateScheduler`.
///
/// `schedule(after:)` does not wait: the action runs at once, whatever the date,
/// and `schedule(after:interval:)` runs the action once (it does not repeat), as
/// in Combine. ``now`` reads a monotonic clock (nanoseconds since the first use
/// of the scheduler in the process), so it never goes backwards.
public struct ImmediateScheduler: Scheduler, Sendable {
    /// The shared instance.
    public static let shared = ImmediateScheduler()

    /// An immediate scheduler (all instances behave the same).
    public init() {}

    /// The time on a monotonic clock, from an origin taken once per process.
    public var now: SchedulerTime {
        SchedulerTime(nanoseconds: ImmediateScheduler.origin.duration(to: .now).nanosecondsClamped)
    }

    private static let origin = ContinuousClock.now

    /// Runs `action` at once.
    public func schedule(_ action: @escaping () -> Void) {
        action()
    }

    /// Runs `action` at once, ignoring `date`; returns a cancellable that does nothing.
    @discardableResult
    public func schedule(after date: SchedulerTime, _ action: @escaping () -> Void) -> any Cancellable {
        action()
        return ImmediateCancellable()
    }

    /// Runs `action` once, at once, ignoring `date` and `interval` (as Combine's immediate scheduler);
    /// returns a cancellable that does nothing.
    @discardableResult
    public func schedule(after date: SchedulerTime, interval: Duration, _ action: @escaping () -> Void) -> any Cancellable {
        action()
        return ImmediateCancellable()
    }
}

/// The cancellable of an action that has already run.
private struct ImmediateCancellable: Cancellable {
    func cancel() {}
}
