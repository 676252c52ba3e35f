import DequeModule
import Foundation

/// A wait that did not finish in time.
struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// A thread-safe FIFO that loop-thread code pushes into and async tests await,
/// with a timeout on every wait so that a bug fails the test instead of hanging it.
final class EventQueue<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer = Deque<Element>()
    private var waiter: (id: UInt64, continuation: CheckedContinuation<Element?, Never>)?
    private var nextID: UInt64 = 0

    func push(_ element: Element) {
        lock.lock()
        if let waiter {
            self.waiter = nil
            lock.unlock()
            waiter.continuation.resume(returning: element)
            return
        }
        buffer.append(element)
        lock.unlock()
    }

    /// The number of elements waiting to be taken.
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return buffer.count
    }

    /// The next element, or `TimedOut` after `timeout`.
    func next(timeout: Duration, _ what: String = "an event") async throws -> Element {
        let element: Element? = await withCheckedContinuation { continuation in
            lock.lock()
            if let first = buffer.popFirst() {
                lock.unlock()
                continuation.resume(returning: first)
                return
            }
            precondition(waiter == nil, "one waiter at a time")
            nextID += 1
            let id = nextID
            waiter = (id, continuation)
            lock.unlock()
            Task {
                try? await Task.sleep(for: timeout)
                self.expire(id)
            }
        }
        guard let element else { throw TimedOut(what: what) }
        return element
    }

    private func expire(_ id: UInt64) {
        lock.lock()
        guard let waiter, waiter.id == id else {
            lock.unlock()
            return
        }
        self.waiter = nil
        lock.unlock()
        waiter.continuation.resume(returning: nil)
    }
}
