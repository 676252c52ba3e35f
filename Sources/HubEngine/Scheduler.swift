/// A point in a scheduler's time: nanoseconds from the scheduler's own origin.
///
/// Real schedulers count from an arbitrary monotonic origin; the virtual-time
/// ``TestScheduler`` starts at zero.
public struct SchedulerTime: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the scheduler's origin.
    public var nanoseconds: Int64

    /// The time `nanoseconds` after the origin.
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// The scheduler's origin.
    public static let zero = SchedulerTime(nanoseconds: 0)

    /// This time moved by `interval` (saturating at the bounds of `Int64`).
    public func advanced(by interval: Duration) -> SchedulerTime {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(interval.nanosecondsClamped)
        if overflow { return SchedulerTime(nanoseconds: interval < .zero ? .min : .max) }
        return SchedulerTime(nanoseconds: sum)
    }

    /// The interval from this time to `other`.
    public func distance(to other: SchedulerTime) -> Duration {
        .nanoseconds(other.nanoseconds - nanoseconds)
    }

    public static func < (lhs: SchedulerTime, rhs: SchedulerTime) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// Seconds since the origin, for logs.
    public var description: String { "\(Double(nanoseconds) / 1e9)s" }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to `Int64`.
    public var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (fromSeconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflow2) = fromSeconds.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return total
    }
}

/// Where and when an action runs, as Combine's `Scheduler`, with time as ``SchedulerTime``
/// and intervals as `Duration`.
///
/// Engine objects are confined to one thread: a scheduler runs its actions on
/// the thread it serves (the hub's event loop, or the test's own thread for
/// ``TestScheduler`` and ``ImmediateScheduler``). Scheduled actions can be
/// cancelled, so that timing operators release their timers.
public protocol Scheduler {
    /// The scheduler's current time.
    var now: SchedulerTime { get }

    /// The smallest interval the scheduler can honour (zero for virtual time).
    var minimumTolerance: Duration { get }

    /// Runs `action` as soon as possible, after what is already queued.
    func schedule(_ action: @escaping () -> Void)

    /// Runs `action` once, at `date` or as soon as possible after it.
    @discardableResult
    func schedule(after date: SchedulerTime, _ action: @escaping () -> Void) -> any Cancellable

    /// Runs `action` at `date`, then every `interval`, until cancelled.
    @discardableResult
    func schedule(after date: SchedulerTime, interval: Duration, _ action: @escaping () -> Void) -> any Cancellable
}

extension Scheduler {
    /// Zero: the default for schedulers that honour exact times.
    public var minimumTolerance: Duration { .zero }
}
