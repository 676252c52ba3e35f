import Synchronization

/// What the threads of one benchmark case share: readiness, progress counters and
/// failures, as atomics (written by the load-generator loops, read by the command and
/// by the publisher to bound its in-flight window).
final class BenchRun: Sendable {
    /// Values received by each subscriber (each written by its own loop only).
    let delivered: [BenchCounter]
    /// Messages published (written by the publisher's loop).
    let published = BenchCounter()
    /// Subscribers whose subscription was confirmed.
    let subscribed = BenchCounter()
    /// Whether the publisher's connection is open.
    let publisherOpen = BenchCounter()
    /// Connections of the case that have closed or failed.
    let closed = BenchCounter()
    /// Whether latencies are being recorded (the measurement window).
    let measuring = Atomic<Bool>(false)
    /// Set once the case tears down: closes are expected from then on.
    let tearingDown = Atomic<Bool>(false)
    private let failureList = Mutex<[String]>([])

    /// A case with `subscribers` subscribers.
    init(subscribers: Int) {
        delivered = (0..<subscribers).map { _ in BenchCounter() }
    }

    /// Notes a failure (a refused subscription, an unexpected close…).
    func fail(_ message: String) {
        failureList.withLock { list in
            if list.count < 20 { list.append(message) }
        }
    }

    /// The failures noted so far.
    var failures: [String] { failureList.withLock { $0 } }

    /// The sum of every subscriber's received values.
    var totalDelivered: Int {
        delivered.reduce(0) { $0 + $1.load() }
    }

    /// The fewest values any subscriber has received.
    var minimumDelivered: Int {
        var minimum = Int.max
        for counter in delivered { minimum = min(minimum, counter.load()) }
        return minimum == .max ? 0 : minimum
    }
}

/// An integer one thread writes and others read.
final class BenchCounter: Sendable {
    private let value = Atomic<Int>(0)

    /// The current value.
    @inline(__always)
    func load() -> Int { value.load(ordering: .relaxed) }

    /// Replaces the value (single writer).
    @inline(__always)
    func store(_ newValue: Int) { value.store(newValue, ordering: .relaxed) }

    /// Adds one (any writer).
    func increment() { value.add(1, ordering: .relaxed) }
}
