import CWebsockets
import DequeModule
import Foundation
import Logging
import Synchronization

// The loop's timers: one lws sorted-usec-list timer armed for the earliest deadline of
// a TimerQueue.
extension EventLoop {
    // MARK: - Timers

    /// The loop's monotonic clock in nanoseconds (`CLOCK_MONOTONIC`).
    public static func monotonicNanoseconds() -> Int64 {
        cws_monotonic_nanoseconds()
    }

    /// Schedules `action` at `deadline` (monotonic nanoseconds), repeating every
    /// `interval` nanoseconds when given. Loop thread only.
    func scheduleTimer(deadline: Int64, interval: Int64?, _ action: @escaping () -> Void) -> TimerQueue.Entry {
        preconditionInEventLoop()
        let entry = timers.insert(deadline: deadline, interval: interval, action: action)
        armTimer()
        return entry
    }

    /// Cancels a timer; idempotent. Loop thread only.
    func cancelTimer(_ entry: TimerQueue.Entry) {
        preconditionInEventLoop()
        timers.cancel(entry)
        armTimer()
    }

    func armTimer() {
        // On libev the loop wakes itself for the next deadline (``serviceOnLibev``).
        guard !isDestroying, eventLibraryLoop == nil, let context, let timerHandle else { return }
        switch timer.update(nextDeadline: timers.nextDeadline, now: EventLoop.monotonicNanoseconds()) {
        case .keep:
            break
        case .cancel:
            cws_timer_cancel(timerHandle)
        case .arm(let microseconds):
            cws_timer_schedule(context, timerHandle, cwsTimerFired, lws_usec_t(microseconds))
        }
    }

    /// Runs the due timers; called by the lws sorted-usec-list callback.
    func fireTimers() {
        noteActivity()
        timer.fired()
        let now = EventLoop.monotonicNanoseconds()
        let mark = timers.sequenceMark
        while let action = timers.popDue(now: now, before: mark) {
            action()
        }
        armTimer()
    }
}

/// The sorted-usec-list callback of the loop's timer.
private func cwsTimerFired(_ sul: UnsafeMutablePointer<lws_sorted_usec_list_t>?) {
    guard let sul, let raw = cws_timer_user(sul) else { return }
    Unmanaged<EventLoop>.fromOpaque(raw).takeUnretainedValue().fireTimers()
}
