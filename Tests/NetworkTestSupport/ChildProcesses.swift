import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The server processes a test run started (nats-server, hubcli nodes): those still
/// running when the test process exits are killed then, so that a test that fails
/// midway, or an object a test never released, leaves nothing running after the run.
public enum ChildProcesses {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var pids: Set<Int32> = []
    nonisolated(unsafe) private static var hookInstalled = false

    /// Kills `pid` when the test process exits, unless ``forget(_:)`` came first.
    public static func killAtExit(_ pid: Int32) {
        lock.withLock {
            pids.insert(pid)
            if !hookInstalled {
                hookInstalled = true
                atexit { ChildProcesses.killAll() }
            }
        }
    }

    /// `pid` has exited and was reaped: nothing to kill (its number may be reused).
    public static func forget(_ pid: Int32) {
        _ = lock.withLock { pids.remove(pid) }
    }

    private static func killAll() {
        for pid in lock.withLock({ pids }) { kill(pid, SIGKILL) }
    }
}
