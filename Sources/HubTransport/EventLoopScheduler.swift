import HubEngine

/// HubEngine's ``HubEngine/Scheduler`` on an ``EventLoop``: actions run on the loop thread,
/// timers come from the loop (one lws sorted-usec-list timer over a deadline heap),
/// and ``now`` is `CLOCK_MONOTONIC`.
///
/// Use it on the loop thread only, like every engine object.
public struct EventLoopScheduler: Scheduler, Sendable {
    /// The loop that runs the actions.
    public let eventLoop: EventLoop

    /// A scheduler on `eventLoop`.
    public init(eventLoop: EventLoop) {
        self.eventLoop = eventLoop
    }

    /// The monotonic clock, in nanoseconds since an arbitrary origin (boot).
    public var now: SchedulerTime {
        SchedulerTime(nanoseconds: EventLoop.monotonicNanoseconds())
    }

    /// Timers are serviced with microsecond resolution.
    public var minimumTolerance: Duration { .microseconds(1) }

    /// Runs `action` on the loop after the work already queued there. Loop thread only.
    public func schedule(_ action: @escaping () -> Void) {
        eventLoop.executeSoon(action)
    }

    /// Runs `action` once at `date` (or as soon as possible after it). Loop thread only.
    @discardableResult
    public func schedule(after date: SchedulerTime, _ action: @escaping () -> Void) -> any Cancellable {
        let entry = eventLoop.scheduleTimer(deadline: date.nanoseconds, interval: nil, action)
        return ScheduledTimer(eventLoop: eventLoop, entry: entry)
    }

    /// Runs `action` at `date`, then every `interval`, until cancelled. Loop thread only.
    @discardableResult
    public func schedule(after date: SchedulerTime, interval: Duration, _ action: @escaping () -> Void) -> any Cancellable {
        let entry = eventLoop.scheduleTimer(
            deadline: date.nanoseconds, interval: max(interval.nanosecondsClamped, 1), action)
        return ScheduledTimer(eventLoop: eventLoop, entry: entry)
    }
}

/// The cancellation handle of one loop timer.
final class ScheduledTimer: Cancellable {
    private let eventLoop: EventLoop
    private var entry: TimerQueue.Entry?

    init(eventLoop: EventLoop, entry: TimerQueue.Entry) {
        self.eventLoop = eventLoop
        self.entry = entry
    }

    /// Cancels the timer; idempotent. Loop thread only.
    func cancel() {
        guard let entry else { return }
        self.entry = nil
        eventLoop.cancelTimer(entry)
    }
}

extension EventLoop {
    /// A HubEngine scheduler whose actions and timers run on this loop.
    public var scheduler: EventLoopScheduler {
        EventLoopScheduler(eventLoop: self)
    }
}
