import DequeModule
import Foundation
import HubRegistry
import HubValue
import HubWire

/// The appends of a ``JetStreamStore`` on their way to the server, published in groups.
///
/// The loop adds each append (``add(_:)``); the store's worker takes whatever has
/// gathered, at most ``groupLimit`` values, publishes them together and waits for
/// their acks (one round trip for the group: ``JetStreamStreams/publish(_:)``), then
/// hands each outcome back to its log on the loop, in the order of the appends. While
/// a group is on its way the next one gathers, so the group grows with the rate: a
/// lone publisher waits one round trip, a busy one shares it.
///
/// Every other request of the worker (a read, a stream's last sequence, a deletion)
/// first publishes the appends added before it (``publishAdded()``), so that it sees
/// them: the order of the requests is the order in which the loop made them.
final class JetStreamAppends: @unchecked Sendable {
    /// The most values one group holds.
    static let groupLimit = 256

    /// One value on its way to its stream.
    struct Append: @unchecked Sendable {
        /// The log that appended it (used on the loop only).
        let log: JetStreamLog
        let stream: String
        let subject: String
        let payload: [UInt8]
        let time: Int64
        /// The retention's size: how many of the values others stored before it are read.
        let size: Int
        let cursor: JetStreamLog.Cursor
        let value: Value
    }

    private let streams: JetStreamStreams
    private let executor: any StoreExecutor
    private let queue: DispatchQueue
    private let lock = NSLock()
    private var added = Deque<Append>()
    private var scheduled = false

    init(streams: JetStreamStreams, executor: any StoreExecutor, queue: DispatchQueue) {
        self.streams = streams
        self.executor = executor
        self.queue = queue
    }

    /// Adds `append` (on the loop); the worker publishes it with the next group.
    func add(_ append: Append) {
        let schedule = lock.withLock {
            added.append(append)
            defer { scheduled = true }
            return !scheduled
        }
        if schedule { queue.async { [self] in publishAdded() } }
    }

    /// Publishes every append added so far, group by group (on the worker).
    func publishAdded() {
        while true {
            let group: [Append] = lock.withLock {
                let count = min(Self.groupLimit, added.count)
                if count == 0 { scheduled = false }
                defer { added.removeFirst(count) }
                return Array(added.prefix(count))
            }
            if group.isEmpty { return }
            let outcomes = streams.publish(group.map { ($0.subject, $0.payload, $0.time) })
            for (append, outcome) in zip(group, outcomes) {
                let result = acknowledged(append, outcome)
                executor.execute { append.log.acked(result, value: append.value) }
            }
        }
    }

    /// The outcome of `append` with the values other nodes stored before it since the
    /// last one its log knows of (the newest `size` at most: older ones are trimmed), so
    /// that the log reports them first.
    private func acknowledged(
        _ append: Append, _ outcome: Result<UInt64, NATSError>
    ) -> Result<(UInt64, [HistoryEntry]), NATSError> {
        let sequence: UInt64
        switch outcome {
        case let .failure(error): return .failure(error)
        case let .success(value): sequence = value
        }
        let cursor = append.cursor
        var others: [HistoryEntry] = []
        if sequence > cursor.seen &+ 1 {
            let from = max(cursor.seen, sequence - 1 - min(sequence - 1, UInt64(append.size)))
            do throws(NATSError) {
                others = try streams.read(
                    stream: append.stream, subject: append.subject, after: from, through: sequence - 1,
                    limit: append.size, maxBytes: .max, cutoff: nil)
            } catch {
                return .failure(error)
            }
        }
        cursor.seen = max(cursor.seen, sequence)
        return .success((sequence, others))
    }
}
