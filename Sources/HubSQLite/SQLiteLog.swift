import DequeModule
import HubRegistry
import HubValue
import HubWire

/// A durable subject's log in an ``SQLiteStore``, as the loop sees it: the appends
/// waiting for their group commit, in order, and the offset and value of the last
/// committed one. Loop-confined.
final class SQLiteLog: SubjectLog {
    /// What the database held for a subject when the store opened.
    struct Restored {
        var id: Int64
        var epoch: String
        var lastOffset: UInt64
        var lastValue: Value?
        /// The table's rows (``HistoryRetention/keepsLatestPerKey``), by key.
        var rows: [String: HistoryEntry] = [:]
    }

    private struct Pending {
        var value: Value
        var bytes: Int
        var completion: (Result<UInt64, HubError>) -> Void
    }

    let id: Int64
    /// The subject's name (for errors).
    let name: String
    let epoch: String
    var retention: HistoryRetention
    private(set) var lastOffset: UInt64
    private(set) var lastValue: Value?
    var onCommit: ((HistoryEntry) -> Void)?
    /// The latest change of each key, as committed (the writer keeps the same rows).
    private var rows: [String: HistoryEntry]
    var latestPerKey: [HistoryEntry] { Array(rows.values) }
    private unowned let store: SQLiteStore
    private var pending = Deque<Pending>()
    /// Whether the subject's history was removed (appends are refused from then on).
    var isRetired = false
    /// Whether no append is waiting for its commit.
    var isSettled: Bool { pending.isEmpty }

    init(store: SQLiteStore, name: String, restored: Restored, retention: HistoryRetention) {
        self.store = store
        self.name = name
        id = restored.id
        epoch = restored.epoch
        lastOffset = restored.lastOffset
        lastValue = restored.lastValue
        rows = restored.rows
        self.retention = retention
    }

    func append(_ value: Value, completion: @escaping (Result<UInt64, HubError>) -> Void) {
        do {
            let bytes = try store.append(value, for: self)
            pending.append(Pending(value: value, bytes: bytes, completion: completion))
        } catch {
            completion(.failure(error))
        }
    }

    func read(
        after: UInt64, through: UInt64, limit: Int, maxBytes: Int,
        completion: @escaping (Result<[HistoryEntry], HubError>) -> Void
    ) {
        guard after < through, limit > 0 else {
            completion(.success([]))
            return
        }
        store.read(self, after: after, through: through, limit: limit, maxBytes: maxBytes, completion: completion)
    }

    /// The oldest pending append committed at `offset`; returns its bytes.
    func committed(offset: UInt64) -> Int? {
        guard let next = pending.popFirst() else { return nil }
        lastOffset = offset
        lastValue = next.value
        if retention.keepsLatestPerKey, let key = TableChange.key(of: next.value) {
            rows[key] = next.value["value"]?.isNull == false ? HistoryEntry(offset: offset, value: next.value) : nil
        }
        next.completion(.success(offset))
        onCommit?(HistoryEntry(offset: offset, value: next.value))
        return next.bytes
    }

    /// The oldest pending append failed; returns its bytes.
    func failed(_ error: HubError) -> Int? {
        guard let next = pending.popFirst() else { return nil }
        next.completion(.failure(error))
        return next.bytes
    }
}
