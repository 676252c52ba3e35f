import HubValue
import HubWire

/// Where subjects keep their history: one protocol for every store, so that a subject
/// with history behaves the same over each (`StoreConformanceTests` runs one suite
/// against all of them).
///
/// - ``MemoryStore``: the embedded default; history lives as long as the process (a
///   restart begins a new epoch).
/// - `SQLiteStore` (module `HubSQLite`): durable subjects on one node, in SQLite in
///   WAL mode; history, current value and epoch survive restarts, `kill -9` included.
/// - A JetStream store (the cluster) fits the same shape: a stream per subject, its
///   sequence numbers as offsets, its identity as the epoch, reads as pulls bounded
///   by a page, ``SubjectLog/onCommit`` fed by the stream.
///
/// Used on the hub's event loop.
public protocol SubjectStore: AnyObject {
    /// Opens the log of the subject `name`, creating it (with a new epoch) when the
    /// store has none, and applying `retention` from now on. It never blocks on I/O:
    /// a store that must reach its disk or network does so on its own threads and
    /// orders that work before the log's first append.
    func openLog(subject name: String, retention: HistoryRetention) throws(HubError) -> any SubjectLog

    /// Removes the subject's log (a `delete` of the subject): its history and last value
    /// are gone, and the next ``openLog(subject:retention:)`` of that name begins a new
    /// epoch. Appends already made to the removed log still complete. Never blocks on I/O.
    func removeLog(subject name: String) throws(HubError)

    /// Lets go of the subject's log without removing its history: another hub sharing the
    /// store removed it (a `delete` on another node of a cluster), and the next
    /// ``openLog(subject:retention:)`` finds what that hub left. A store of one hub
    /// never hears of such a delete; the default removes the log.
    func forgetLog(subject name: String) throws(HubError)

    /// Finishes the work under way (every acknowledged append is stored) and releases
    /// the store's threads and files. Blocks; call it once the hub no longer appends.
    func close()

    /// Why the store cannot store what is appended now (its disk refuses commits), after
    /// looking again if it last looked long enough ago; `nil` while it can. The service's
    /// readiness check (`/ready`) calls it on the loop.
    func unavailability() -> String?

    // MARK: Checkpoints of running pipelines

    /// Reads the last checkpoint committed for the running pipeline `pipeline` (`nil`: it
    /// has none), once every commit made for it so far has completed, and hands it to
    /// `completion` on the loop (at once for a store of one hub that knows it). Never blocks.
    func loadCheckpoint(pipeline: String, completion: @escaping (Result<Value?, HubError>) -> Void)

    /// Commits `checkpoint` of the running pipeline `pipeline` together with the values
    /// that `body` appends to this store's logs (``SubjectLog/append(_:completion:)``
    /// calls it makes while it runs): they are all stored or none is. `completion` runs on
    /// the loop once they are, after the appends' own completions; a failure leaves the
    /// previous checkpoint in place and fails the appends. A store shared by several hubs
    /// refuses a commit made after another hub committed for the same pipeline since this
    /// one read it, with an error whose `data` is `{"reason": "fenced"}`: another node runs
    /// the pipeline now. Never blocks.
    func commit(
        checkpoint: Value, pipeline: String, appending body: () -> Void,
        completion: @escaping (Result<Void, HubError>) -> Void)
}

extension SubjectStore {
    /// A store of one hub: forgetting is removing.
    public func forgetLog(subject name: String) throws(HubError) {
        try removeLog(subject: name)
    }

    /// A store that is always available.
    public func unavailability() -> String? { nil }
}
