/// How much of a subject's history a store keeps: at most ``size`` values, and
/// none older than ``ttl`` (configuration `subjects.NAME.history: {size, ttl}`).
///
/// A store drops the oldest values beyond ``size`` when it commits new ones, and
/// never returns a value older than ``ttl`` (it removes them at its own pace).
public struct HistoryRetention: Hashable, Sendable {
    /// The bound on the number of values when the configuration gives none.
    public static let defaultSize = 1000

    /// The most values kept (≥ 1).
    public var size: Int
    /// The longest a value is kept, if bounded.
    public var ttl: Duration?
    /// Whether the store also keeps the latest value of every key, whatever ``size`` and
    /// ``ttl`` drop (a table subject's changelog, whose values are `{"key": K, "value": V}`
    /// changes: see ``SubjectTable``): one row per live key, removed by a `null` value, so
    /// that the table comes back whole after a restart while the store holds one row per
    /// key however many updates it took.
    public var keepsLatestPerKey = false

    /// At most `size` values (at least 1), none older than `ttl` when given.
    public init(size: Int = HistoryRetention.defaultSize, ttl: Duration? = nil, keepsLatestPerKey: Bool = false) {
        self.size = Swift.max(1, size)
        self.ttl = ttl
        self.keepsLatestPerKey = keepsLatestPerKey
    }
}
