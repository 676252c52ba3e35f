import DequeModule
import Foundation

/// A wait that did not finish in time.
public struct TimedOut: Error, CustomStringConvertible {
    /// What was awaited.
    public var what: String

    /// A timeout while waiting for `what`.
    public init(what: String) { self.what = what }

    public var description: String { "timed out waiting for \(what)" }
}

/// A thread-safe FIFO that event-loop code pushes into and async tests await,
/// with a timeout on every wait so that a bug fails the test instead of hanging
/// it (the timeout only ends a wait that failed; nothing sleeps to synchronise).
public final class EventQueue<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer = Deque<Element>()
    private var waiter: (id: UInt64, continuation: CheckedContinuation<Element?, Never>)?
    private var nextID: UInt64 = 0

    /// An empty queue.
    public init() {}

    /// Queues `element`, or hands it to the waiting test.
    public func push(_ element: Element) {
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
    public var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return buffer.count
    }

    /// Everything queued so far, without waiting.
    public func drain() -> [Element] {
        lock.lock()
        defer { lock.unlock() }
        let all = Array(buffer)
        buffer.removeAll()
        return all
    }

    /// The next element, or `TimedOut` after `timeout`.
    public func next(timeout: Duration = .seconds(10), _ what: String = "an event") async throws -> Element {
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

    /// `count` elements in arrival order, all within `timeout`.
    public func next(_ count: Int, timeout: Duration = .seconds(20), _ what: String = "events") async throws -> [Element] {
        var result: [Element] = []
        result.reserveCapacity(count)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while result.count < count {
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { throw TimedOut(what: "\(count) \(what), got \(result.count)") }
            result.append(try await next(timeout: left, what))
        }
        return result
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
