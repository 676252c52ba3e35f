import CWebsockets
import DequeModule
import Foundation
import Logging
import Synchronization

// The end of a service pass: handed-in work drained, end-of-pass work run, and the
// longest pass in CPU time kept for the storm checks and the metrics.
extension EventLoop {
    /// Runs the queued work; called on `LWS_CALLBACK_EVENT_WAIT_CANCELLED`.
    func drainWork() {
        noteActivity()
        remoteWork.takePending(into: &drained)
        for work in drained {
            if work.isInput { noteInput() }
            work.run()
        }
        drained.removeAll(keepingCapacity: true)
        runLocalWork()
        if !localWork.isEmpty { remoteWork.wake() }
    }

    /// Runs the local work queued before this pass (work it queues waits for the next).
    func runLocalWork() {
        var budget = localWork.count
        while budget > 0, let work = localWork.popFirst() {
            budget -= 1
            work()
        }
    }

    /// Runs the work queued for the end of this pass (work it queues waits for the next).
    func runEndOfPassWork() {
        guard !endOfPassWork.isEmpty else { return }
        noteActivity()
        var budget = endOfPassWork.count
        while budget > 0, let work = endOfPassWork.popFirst() {
            budget -= 1
            work()
        }
    }

    // MARK: - Pass CPU time

    /// The most CPU time (the loop thread's) one service pass took since the previous
    /// call, which starts a new window; `nil` unless ``Configuration/measuresPassCPUTime``.
    /// A pass is everything between two waits: the sockets' events, handed-in work,
    /// timers and writes. Callable from any thread.
    public func takeLongestPassCPUTime() -> Duration? {
        guard configuration.measuresPassCPUTime else { return nil }
        return .nanoseconds(longestPassCPU.exchange(0, ordering: .relaxed))
    }

    /// Ends a pass's CPU measurement (waiting costs no CPU: the time since the previous
    /// pass ended is this pass's).
    @inline(__always)
    func notePassEnded() {
        guard configuration.measuresPassCPUTime else { return }
        let now = cws_thread_cpu_nanoseconds()
        let spent = now - passCPUMark
        passCPUMark = now
        var current = longestPassCPU.load(ordering: .relaxed)
        while spent > current {
            let (exchanged, original) = longestPassCPU.compareExchange(
                expected: current, desired: spent, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
    }
}
