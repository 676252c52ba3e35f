import DequeModule
import HubEngine
import HubValue
import HubWire

/// A subject's history in memory (``MemoryStore``): a ring of the last values, each
/// with its offset, time and estimated size. Loop-confined; everything completes at once.
final class MemoryLog: SubjectLog {
    private struct Stored {
        var offset: UInt64
        var time: Int64
        var bytes: Int
        var value: Value
    }

    let epoch: String
    var retention: HistoryRetention
    private let clock: HistoryClock
    private var entries = Deque<Stored>()
    private(set) var lastOffset: UInt64 = 0
    private(set) var lastValue: Value?
    var onCommit: ((HistoryEntry) -> Void)?
    /// The latest change of each key (``HistoryRetention/keepsLatestPerKey``).
    private var rows: [String: HistoryEntry] = [:]
    var latestPerKey: [HistoryEntry] { Array(rows.values) }

    init(epoch: String, retention: HistoryRetention, clock: @escaping HistoryClock) {
        self.epoch = epoch
        self.retention = retention
        self.clock = clock
    }

    func append(_ value: Value, completion: @escaping (Result<UInt64, HubError>) -> Void) {
        let now = clock()
        // Times never go backwards within a log, so that expiry always trims a prefix.
        let time = max(now, entries.last?.time ?? now)
        lastOffset += 1
        lastValue = value
        entries.append(Stored(offset: lastOffset, time: time, bytes: value.estimatedBytes, value: value))
        while entries.count > retention.size { entries.removeFirst() }
        expire(now: now)
        if retention.keepsLatestPerKey, let key = TableChange.key(of: value) {
            rows[key] = value["value"]?.isNull == false ? HistoryEntry(offset: lastOffset, value: value) : nil
        }
        completion(.success(lastOffset))
        onCommit?(HistoryEntry(offset: lastOffset, value: value))
    }

    func read(
        after: UInt64, through: UInt64, limit: Int, maxBytes: Int,
        completion: @escaping (Result<[HistoryEntry], HubError>) -> Void
    ) {
        expire(now: clock())
        var page: [HistoryEntry] = []
        guard let first = entries.first?.offset, limit > 0 else {
            completion(.success(page))
            return
        }
        // Offsets in the ring are consecutive: the start is an index computation.
        var index = after >= first ? Int(after - first + 1) : 0
        var bytes = 0
        while index < entries.count, page.count < limit, bytes < maxBytes {
            let stored = entries[index]
            guard stored.offset <= through else { break }
            page.append(HistoryEntry(offset: stored.offset, value: stored.value))
            bytes += stored.bytes
            index += 1
        }
        completion(.success(page))
    }

    /// Drops the values older than the ttl (a prefix: times never decrease).
    private func expire(now: Int64) {
        guard let ttl = retention.ttl else { return }
        let cutoff = now - ttl.nanosecondsClamped
        while let first = entries.first, first.time < cutoff { entries.removeFirst() }
    }
}
