/// The event loop's one libwebsockets timer (a sorted-usec-list entry) as a value: when
/// to arm it for the earliest deadline of the loop's ``TimerQueue``, and how the loop
/// waits through the last fraction of a millisecond before a deadline.
///
/// lws's `poll` timeout is in whole milliseconds, rounded down: with 2.4 ms to go it
/// sleeps 2 ms, then, with 0.4 ms to go, polls with a zero timeout again and again until
/// the timer is due. ``wait(now:hasPendingWork:)`` tells the loop to sleep through that
/// last fraction instead, and only then poll, unless work may be waiting (the loop's
/// last pass handled events, or work was handed in): I/O that arrives while the loop
/// sleeps waits less than a millisecond.
struct LoopTimer {
    /// What to do with the lws timer.
    enum Command: Equatable {
        /// It is armed for the right deadline already (or nothing is due and it is idle).
        case keep
        /// Disarm it: no deadline is left.
        case cancel
        /// (Re)arm it to fire in this many microseconds.
        case arm(microseconds: Int64)
    }

    /// How the loop enters its next service pass.
    enum Wait: Equatable {
        /// Poll now (lws sleeps in `poll` for the whole milliseconds left, if any).
        case poll
        /// Sleep this many nanoseconds first: less than a millisecond is left before the
        /// armed deadline, which lws's `poll` cannot wait for.
        case sleep(nanoseconds: Int64)
    }

    /// Nanoseconds in a millisecond: lws's poll resolution.
    static let pollResolution: Int64 = 1_000_000

    /// The deadline (monotonic nanoseconds) the lws timer is armed for, if any.
    private(set) var armedDeadline: Int64?

    init() {}

    /// Brings the lws timer in line with `nextDeadline`, the earliest live deadline.
    mutating func update(nextDeadline: Int64?, now: Int64) -> Command {
        guard let nextDeadline else {
            guard armedDeadline != nil else { return .keep }
            armedDeadline = nil
            return .cancel
        }
        if armedDeadline == nextDeadline { return .keep }
        armedDeadline = nextDeadline
        let delay = nextDeadline - now
        return .arm(microseconds: delay <= 0 ? 0 : (delay + 999) / 1000)
    }

    /// The lws timer fired: it is no longer armed.
    mutating func fired() {
        armedDeadline = nil
    }

    /// How to enter the next service pass at `now`: sleep through the sub-millisecond
    /// remainder before the armed deadline unless work may be waiting.
    /// (Evaluated only while a timer is armed: the clock and the check for work cost
    /// nothing on the passes of a loop without timers.)
    func wait(now: @autoclosure () -> Int64, hasPendingWork: @autoclosure () -> Bool) -> Wait {
        guard let armedDeadline else { return .poll }
        let remaining = armedDeadline - now()
        guard remaining > 0, remaining < LoopTimer.pollResolution, !hasPendingWork() else { return .poll }
        return .sleep(nanoseconds: remaining)
    }
}
