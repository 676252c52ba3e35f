import Foundation

/// One of the store's threads (writer, reader, checkpointer) and the lock that guards
/// the work handed to it. The owner hands work in under the lock (``handIn(_:)``); the
/// thread takes it with ``next(_:)`` until that gives `nil`, after ``stop()``, which
/// waits until the thread has finished what it was handed.
final class StoreWorkerThread: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var stopping = false
    private var exited = false

    /// Starts a thread named `name` that runs `body`.
    func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            body()
            condition.lock()
            exited = true
            condition.broadcast()
            condition.unlock()
        }
        thread.name = name
        thread.start()
    }

    /// Runs `body` under the lock, then wakes the thread.
    func handIn<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return try body()
    }

    /// Runs `body` under the lock, without waking the thread.
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    /// On the thread: the next work `take` gives (it runs under the lock), waiting for
    /// some; `nil` once ``stop()`` was called and `take` has nothing left.
    func next<Work>(_ take: () -> Work?) -> Work? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let work = take() { return work }
            if stopping { return nil }
            condition.wait()
        }
    }

    /// Tells the thread to stop once it has taken everything, and waits until it has.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !exited { condition.wait() }
        condition.unlock()
    }
}
