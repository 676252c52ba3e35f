import HubValue
import HubWire

/// The table side of a table subject (configuration `kind: table`): the latest value of
/// each key, kept from the subject's changelog.
///
/// A table subject's values are changes, `{"key": K, "value": V}` (``TableChange``):
/// `V` upserts the key, `null` deletes it. Each committed change has its offset in the
/// subject's history (the changelog, bounded by its `history` like any other); the table
/// holds, for each live key, the change that set it, with that offset. Its store keeps
/// the same (``HistoryRetention/keepsLatestPerKey``), so that the table survives a restart
/// whole while the changelog stays bounded.
///
/// **Bounds.** At most ``Limits/maxKeys`` live keys and ``Limits/maxBytes`` of values
/// (estimated, keys included), counting the changes still being stored: a change that
/// would go beyond either is refused with `limit_exceeded` before it is stored, so that a
/// client inventing keys cannot grow the broker's memory or its store. Deletes are always
/// taken (a delete frees room), and so are updates of live keys that keep the table
/// within ``Limits/maxBytes``. Loop-confined.
public final class SubjectTable {
    /// A table's bounds (configuration `maxKeys`, `maxBytes`).
    public struct Limits: Hashable, Sendable {
        /// The live keys a table holds when the configuration gives no bound.
        public static let defaultMaxKeys = 10_000
        /// The bytes of values a table holds when the configuration gives no bound.
        public static let defaultMaxBytes = 64 << 20

        /// The most live keys.
        public var maxKeys: Int
        /// The most bytes of keys and values (estimated as ``Value/estimatedBytes``).
        public var maxBytes: Int

        /// Bounds of `maxKeys` keys and `maxBytes` bytes.
        public init(maxKeys: Int = Limits.defaultMaxKeys, maxBytes: Int = Limits.defaultMaxBytes) {
            self.maxKeys = Swift.max(1, maxKeys)
            self.maxBytes = Swift.max(1, maxBytes)
        }
    }

    private struct Row {
        var entry: HistoryEntry
        var bytes: Int
    }

    /// The subject's name (for errors).
    public let name: String
    /// Its bounds.
    public let limits: Limits
    private var rows: [String: Row] = [:]
    /// Bytes of the live rows.
    public private(set) var bytes = 0
    /// Keys that changes being stored add, with how many such changes there are.
    private var pendingNewKeys: [String: Int] = [:]
    /// Bytes that changes being stored may add.
    private var pendingBytes = 0

    /// A table named `name` bounded by `limits`, holding the changes `restored` (its
    /// store's rows: the latest change of each key, in any order).
    init(name: String, limits: Limits, restored: [HistoryEntry]) {
        self.name = name
        self.limits = limits
        for entry in restored { apply(entry) }
    }

    /// The number of live keys.
    public var count: Int { rows.count }

    /// The current value of `key` and the offset of the change that set it, or `nil`.
    public func lookup(_ key: String) -> HistoryEntry? {
        guard let row = rows[key] else { return nil }
        return HistoryEntry(offset: row.entry.offset, value: row.entry.value["value"] ?? .null)
    }

    /// The live keys' changes in the order of their offsets (a stable order, and the one
    /// a resumed subscription relies on: every change after the last offset seen is
    /// either in the rest of the snapshot or in the changelog after it).
    public func snapshot() -> [HistoryEntry] {
        rows.values.map(\.entry).sorted { $0.offset < $1.offset }
    }

    /// Checks `value` as a change of this table and reserves room for it: `invalid_value`
    /// when it is not a change, `limit_exceeded` when the table has no room for it. The
    /// normalised change, to store; call ``release(_:)`` with it once it is stored or failed.
    func admit(_ value: Value) throws(HubError) -> TableChange {
        let change = try validate(value)
        guard let newValue = change.value else { return change }
        let size = change.key.utf8.count + newValue.estimatedBytes
        let isNew = rows[change.key] == nil && pendingNewKeys[change.key] == nil
        if isNew || pendingNewKeys[change.key] != nil { pendingNewKeys[change.key, default: 0] += 1 }
        pendingBytes += size
        return change
    }

    /// Checks `value` as a change of this table, and that the table has room for it now
    /// (counting the changes being stored), without reserving it: `invalid_value`,
    /// `limit_exceeded`. A sender hears of a full table before its value is accepted.
    public func validate(_ value: Value) throws(HubError) -> TableChange {
        let change = try Self.check(value, table: name)
        guard let newValue = change.value else { return change }
        let size = change.key.utf8.count + newValue.estimatedBytes
        let isNew = rows[change.key] == nil && pendingNewKeys[change.key] == nil
        if isNew, rows.count + pendingNewKeys.count >= limits.maxKeys {
            throw HubError(
                .limitExceeded,
                "table '\(name)' holds \(limits.maxKeys) keys, its most (maxKeys): delete keys (value null) or raise the bound",
                data: ["limit": "maxKeys", "max": .int(Int64(limits.maxKeys))])
        }
        // An update gives back its key's old bytes; the changes being stored count whole.
        if bytes - (rows[change.key]?.bytes ?? 0) + pendingBytes + size > limits.maxBytes {
            throw HubError(
                .limitExceeded,
                "table '\(name)' would hold more than \(limits.maxBytes) bytes (maxBytes): delete keys or raise the bound",
                data: ["limit": "maxBytes", "max": .int(Int64(limits.maxBytes))])
        }
        return change
    }

    /// Gives back the room ``admit(_:)`` reserved for `change`.
    func release(_ change: TableChange) {
        guard let value = change.value else { return }
        pendingBytes -= change.key.utf8.count + value.estimatedBytes
        if let pending = pendingNewKeys[change.key] {
            pendingNewKeys[change.key] = pending > 1 ? pending - 1 : nil
        }
    }

    /// Applies a committed change (before the subject's subscribers get it).
    func apply(_ entry: HistoryEntry) {
        guard case let .success(change) = TableChange.parse(entry.value) else { return }
        if let old = rows.removeValue(forKey: change.key) { bytes -= old.bytes }
        guard let value = change.value else { return }
        let size = change.key.utf8.count + value.estimatedBytes
        rows[change.key] = Row(entry: entry, bytes: size)
        bytes += size
    }

    /// `value` as a change of the table `table`, or `invalid_value` saying why not.
    static func check(_ value: Value, table: String) throws(HubError) -> TableChange {
        switch TableChange.parse(value) {
        case let .success(change): return change
        case let .failure(refusal):
            throw HubError(
                .invalidValue, "table '\(table)' refuses the value: \(refusal.message)",
                data: ["table": .string(table), "error": .string(refusal.message)])
        }
    }
}
