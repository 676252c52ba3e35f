import HubValue
import HubWire

/// One subject's history in a ``SubjectStore``: an append-only log of values with
/// offsets, trimmed by the subject's ``HistoryRetention``.
///
/// The contract every store keeps (and `StoreConformanceTests` checks for each):
///
/// - **Loop confinement.** Every member is used on the hub's event loop, and every
///   completion and ``onCommit`` call runs there (a store with threads of its own
///   hands results back through its ``StoreExecutor``). A completion may run before
///   the call that gave it returns (the memory store's do).
/// - **Offsets.** The first value of an ``epoch`` has offset 1; each committed value
///   has the offset after the previous one, whoever wrote it. Offsets are never
///   reused within an epoch: ``lastOffset`` survives trimming (and, for a durable
///   store, restarts).
/// - **Appends.** ``append(_:completion:)`` completes in the order of the calls, with
///   the value's offset once it is committed (for a durable store: once it is
///   stored as its sync policy promises), or with an error, in which case the value
///   is not in the log. For a value appended here, the completion runs before
///   ``onCommit`` reports it, so that an acknowledgement precedes the value's
///   delivery.
/// - **Commits.** ``onCommit`` reports every committed value once, in offset order,
///   after ``lastOffset`` and ``lastValue`` include it. (A store shared by several
///   hubs, such as a JetStream stream, reports the values the other hubs committed
///   too: the subject delivers its live values from here.)
/// - **Reads.** ``read(after:through:limit:maxBytes:completion:)`` returns the values
///   still kept with `after` < offset ≤ `through`, in order, without gaps except
///   where retention dropped values, at most `limit` of them, and stops after the
///   value that reaches `maxBytes` of encoded JSON: a read never loads more than
///   one page into memory. A value older than the retention's ttl is never returned.
public protocol SubjectLog: AnyObject {
    /// The identity of this history: it changes whenever the history before it is lost
    /// (a new log, or a store that does not survive a restart reopened), and never
    /// otherwise.
    var epoch: String { get }

    /// The offset of the last value committed (0 when none ever was in this epoch).
    var lastOffset: UInt64 { get }

    /// The value at ``lastOffset`` (kept even when retention dropped it from the
    /// readable history), or `nil` when there is none: a durable current-value subject
    /// comes back with it after a restart.
    var lastValue: Value? { get }

    /// With ``HistoryRetention/keepsLatestPerKey``: the latest committed change of each live
    /// key (``TableChange``), with its offset, in any order, whatever the size and ttl
    /// dropped from the history; a durable store has them back after a restart. Empty
    /// otherwise (the default: a store that keeps no table).
    var latestPerKey: [HistoryEntry] { get }

    /// Whether the log keeps only each key's latest change (a table's changelog compacted
    /// per key, as a JetStream store keeps it): its offsets have gaps where a key changed
    /// again, and the changes after any offset of its epoch, gaps and all, still bring a
    /// table up to date. `false` (the default): the log keeps a run of values without gaps.
    var compactsPerKey: Bool { get }

    /// Called with each committed value, in offset order (see the type's contract).
    var onCommit: ((HistoryEntry) -> Void)? { get set }

    /// Appends `value`; `completion` gets its offset once committed, or the error that
    /// kept it out of the log (`internal`, naming the store's failure).
    func append(_ value: Value, completion: @escaping (Result<UInt64, HubError>) -> Void)

    /// Calls `completion` once every value committed before the call (by any hub sharing
    /// the store) has been reported through ``onCommit`` (or at once, for a store of one
    /// hub: the default). A replay begins after it.
    func catchUp(_ completion: @escaping () -> Void)

    /// Reads the kept values with `after` < offset ≤ `through`, in offset order: at most
    /// `limit` (≥ 1) of them, stopping after the value that brings the page to
    /// `maxBytes` of encoded JSON (a page holds at least one value when any is kept).
    func read(
        after: UInt64, through: UInt64, limit: Int, maxBytes: Int,
        completion: @escaping (Result<[HistoryEntry], HubError>) -> Void)

    /// Hands the log the demand of its subject's live subscribers on this hub: a store
    /// that fetches values other hubs committed fetches within it (see ``LiveDemand``).
    /// Others ignore it: the default.
    func attach(_ demand: LiveDemand)
}

extension SubjectLog {
    /// A store of one hub knows every committed value: at once.
    public func catchUp(_ completion: @escaping () -> Void) { completion() }

    /// A store of one hub commits only what this hub appends: nothing to fetch.
    public func attach(_ demand: LiveDemand) {}

    /// A store that keeps no table.
    public var latestPerKey: [HistoryEntry] { [] }

    /// A log without gaps.
    public var compactsPerKey: Bool { false }
}
