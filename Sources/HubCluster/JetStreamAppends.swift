import DequeModule
import Foundation
import HubLoop
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
///
/// A running pipeline's commit (``addCommit(_:)``) takes its place among the appends:
/// the appends added before it are published first, then its checkpoint is written and
/// its own values published (see ``JetStreamCheckpoints``), then what was added after.
final class JetStreamAppends: @unchecked Sendable {
    /// The most values one group holds.
    static let groupLimit = 256

    /// One value on its way to its stream.
    struct Append: @unchecked Sendable {
        /// The log that appended it (used on the loop only).
        let log: JetStreamLog
        let stream: String
        /// The NATS subject it is published to.
        let subject: String
        /// The subjects of its stream (a table's: every key's), which reads filter on.
        let filter: String
        let payload: [UInt8]
        let time: Int64
        /// The retention's size: how many of the values others stored before it are read.
        let size: Int
        let cursor: JetStreamLog.Cursor
        let value: Value
    }

    /// A running pipeline's checkpoint and the values it wrote into durable subjects.
    struct Commit: @unchecked Sendable {
        let pipeline: String
        let checkpoint: Value
        let appends: [Append]
        /// Runs on the loop with the outcome.
        let completion: (Result<Void, HubError>) -> Void
    }

    private enum Item {
        case append(Append)
        case commit(Commit)
    }

    private let streams: JetStreamStreams
    private let executor: any StoreExecutor
    private let queue: DispatchQueue
    private let checkpoints: JetStreamCheckpoints
    private let lock = NSLock()
    private var added = Deque<Item>()
    private var scheduled = false

    init(streams: JetStreamStreams, executor: any StoreExecutor, queue: DispatchQueue, checkpoints: JetStreamCheckpoints) {
        self.streams = streams
        self.executor = executor
        self.queue = queue
        self.checkpoints = checkpoints
    }

    /// Adds `append` (on the loop); the worker publishes it with the next group.
    func add(_ append: Append) {
        add(.append(append))
    }

    /// Adds `commit` (on the loop); the worker makes it after the appends added before.
    func addCommit(_ commit: Commit) {
        add(.commit(commit))
    }

    private func add(_ item: Item) {
        let schedule = lock.withLock {
            added.append(item)
            defer { scheduled = true }
            return !scheduled
        }
        if schedule { queue.async { [self] in publishAdded() } }
    }

    /// Publishes every append added so far, group by group, and makes the commits among
    /// them in their places (on the worker).
    func publishAdded() {
        while true {
            let next: (group: [Append], commit: Commit?) = lock.withLock {
                if case let .commit(commit)? = added.first {
                    added.removeFirst()
                    return ([], commit)
                }
                var group: [Append] = []
                while group.count < Self.groupLimit, case let .append(append)? = added.first {
                    group.append(append)
                    added.removeFirst()
                }
                if group.isEmpty { scheduled = false }
                return (group, nil)
            }
            if let commit = next.commit {
                make(commit)
                continue
            }
            if next.group.isEmpty { return }
            publish(next.group, ids: nil)
        }
    }

    /// Publishes `group` (with `ids` as their message ids, if given) and hands each outcome
    /// to its log on the loop.
    private func publish(_ group: [Append], ids: [String]?) {
        let outcomes = streams.publish(group.enumerated().map { ($1.subject, $1.payload, $1.time, ids?[$0]) })
        for (append, outcome) in zip(group, outcomes) {
            let result = acknowledged(append, outcome)
            executor.execute { append.log.acked(result, value: append.value) }
        }
    }

    /// Makes `commit` (see ``JetStreamCheckpoints``): the checkpoint written ahead with its
    /// values, the values published, the checkpoint settled.
    private func make(_ commit: Commit) {
        let pipeline = commit.pipeline
        let ids = checkpoints.ids(for: pipeline, count: commit.appends.count)
        var published = false
        let result: Result<Void, HubError>
        do throws(NATSError) {
            let values = zip(commit.appends, ids).map { (subject: $0.subject, value: $0.value, time: $0.time, id: $1) }
            if try checkpoints.writeAhead(pipeline, checkpoint: commit.checkpoint, values: values) == nil {
                result = .failure(JetStreamCheckpoints.fenced(pipeline))
            } else if commit.appends.isEmpty {
                result = .success(())
            } else {
                publish(commit.appends, ids: ids)
                published = true
                // The values are stored and the checkpoint holds them: a failure to settle it
                // only leaves them to be published again (and kept once) by the next reader.
                _ = try? checkpoints.settle(pipeline, checkpoint: commit.checkpoint)
                result = .success(())
            }
        } catch {
            result = .failure(JetStreamStore.hubError(error))
        }
        if !published, case let .failure(error) = result {
            // Never published: each log hears that its append failed, in its order.
            let failure = NATSError(.jetStreamFailed, error.message)
            for append in commit.appends {
                executor.execute { append.log.acked(.failure(failure), value: append.value) }
            }
        }
        let completion = LoopBound(commit.completion, eventLoop: executor)
        executor.execute { completion.value(result) }
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
                    stream: append.stream, subject: append.filter, after: from, through: sequence - 1,
                    limit: append.size, maxBytes: .max, cutoff: nil)
            } catch {
                return .failure(error)
            }
        }
        cursor.seen = max(cursor.seen, sequence)
        return .success((sequence, others))
    }
}
