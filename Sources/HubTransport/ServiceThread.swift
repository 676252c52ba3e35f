import Foundation

/// An event loop's dedicated thread: started once, recognisable for the loop's
/// confinement checks, and joined when the loop stops.
final class ServiceThread: @unchecked Sendable {
    // Written once by the thread itself before `signalReady()`: read after that only.
    private var thread = pthread_t()
    private let ready = DispatchSemaphore(value: 0)
    private let exitCondition = NSCondition()
    private var hasExited = false  // guarded by exitCondition

    init() {}

    /// Starts a thread named `name` running `body`, and returns once `body` called
    /// ``signalReady()``.
    func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            self.thread = pthread_self()
            body()
        }
        thread.name = name
        thread.start()
        ready.wait()
    }

    /// Whether the caller runs on this thread.
    var isCurrent: Bool {
        pthread_equal(pthread_self(), thread) != 0
    }

    /// Lets ``start(name:_:)`` return (the thread is set up, or failed to be).
    func signalReady() {
        ready.signal()
    }

    /// The thread's work is over: ``waitForExit()`` returns from now on.
    func signalExit() {
        exitCondition.lock()
        hasExited = true
        exitCondition.broadcast()
        exitCondition.unlock()
    }

    /// Blocks until the thread called ``signalExit()``.
    func waitForExit() {
        exitCondition.lock()
        while !hasExited { exitCondition.wait() }
        exitCondition.unlock()
    }
}
