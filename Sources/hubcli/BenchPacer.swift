import Foundation
import HubTransport
import Synchronization

/// Wakes a loop at precise times from a thread of its own: `clock_nanosleep` to an
/// absolute `CLOCK_MONOTONIC` deadline, then ``EventLoop/execute(_:)``.
///
/// The loop's own timer cannot pace sub-millisecond intervals without spinning:
/// libwebsockets 4.1 waits in `poll` with a timeout in whole milliseconds, so a timer
/// less than 1 ms away makes the loop poll with timeout 0 until it is due, burning
/// a core that, on a small machine, the broker needs.
final class BenchPacer: Sendable {
    private let stopped = Atomic<Bool>(false)

    /// Calls `tick` on `eventLoop` every `interval` nanoseconds (on absolute deadlines,
    /// so that lateness does not accumulate) until ``stop()``.
    init(interval: Int64, eventLoop: EventLoop, tick: @Sendable @escaping () -> Void) {
        let thread = Thread { [self] in
            let start = EventLoop.monotonicNanoseconds()
            var count: Int64 = 0
            while !self.stopped.load(ordering: .relaxed) {
                count += 1
                let deadline = start + count * interval
                var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
                if self.stopped.load(ordering: .relaxed) { break }
                eventLoop.execute(tick)
            }
        }
        thread.name = "bench-pacer"
        thread.start()
    }

    /// Stops the ticks (one already handed to the loop may still run).
    func stop() {
        stopped.store(true, ordering: .relaxed)
    }
}
