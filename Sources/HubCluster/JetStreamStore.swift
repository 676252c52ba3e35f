import Dispatch
import HubLoop
import HubRegistry
import HubValue
import HubWire
import Logging

/// The cluster's store: each subject's history in a JetStream stream of its own, so
/// that every node of the cluster reads and appends the same history, and a client
/// whose node died resumes on another with `since` and loses nothing.
///
/// - **Streams.** The subject NAME lives in the stream `HUB_H_<hex of NAME>` on the NATS
///   subject `hub.h.NAME` (``ClusterSubjectNames/historyStream(_:)``,
///   ``ClusterSubjectNames/history(_:)``), with `max_msgs` = the retention's size,
///   `max_age` = its ttl, discarding the oldest, file storage for durable subjects
///   (``Storage/file``) and memory storage otherwise.
/// - **Tables.** A table subject's stream keeps its changelog compacted per key: each
///   change `{"key": K, "value": V}` goes to `hub.tk.<hex of NAME>.k<hex of K>`
///   (``ClusterSubjectNames/tableKey(_:key:)``) and the stream keeps the last message of
///   each (`max_msgs_per_subject: 1`, as NATS KV does; no `max_msgs`, no `max_age`). The
///   stream holds one message per key (a deleted key's `null` included) however many
///   updates it took; its messages are the table's rows when the log is opened, and every
///   node follows the stream while the log is open (``JetStreamLog``).
/// - **Offsets and epochs.** Offsets are the stream's sequences. The epoch is the
///   stream's identity: 16 hex digits drawn when the stream is created and kept in its
///   description (`hub-epoch:…`); deleting the subject deletes the stream, so the next
///   one has a new epoch. Every node binding the stream reads the same epoch.
/// - **Appends.** An append is a stored publish; it completes with the ack's sequence
///   once the server has stored the value. Appends are published in groups
///   (``JetStreamAppends``): those made while a group waits for its acks go together
///   next, one round trip for each group. At most `maxPendingAppends` wait for their
///   acks; beyond, appends fail with `limit_exceeded`.
/// - **Reads.** A read is a series of direct gets (the next message on the subject from
///   a sequence), at most the page's `limit`, stopping at its `maxBytes`: never more
///   than one page in memory, never an unbounded push.
/// - **Checkpoints.** A running pipeline's checkpoints live in the key-value bucket
///   `hub_checkpoints`, written ahead of the values the pipeline wrote into durable
///   subjects (``JetStreamCheckpoints``): the node that takes a pipeline over resumes from
///   its last checkpoint, and a node that lost it cannot commit over the new one.
///
/// **Where the work runs.** Every JetStream request blocks until the server answers (or
/// the timeout), so they run on one worker thread of the store, in the order they are
/// made; results come back to the hub's loop through the ``StoreExecutor``. The one
/// exception is ``openLog(subject:retention:)``, which waits on the loop for the
/// stream to be bound (one request to the server, a few hundred microseconds on a
/// local network, at most the timeout): the log's epoch and last offset must be known
/// when it returns.
///
/// Its members are used on the hub's loop.
public final class JetStreamStore: SubjectStore {
    /// Where the server keeps a stream.
    public enum Storage: String, Sendable {
        /// On disk: a durable subject's history survives a restart of the NATS server.
        case file
        /// In the server's memory: the history lives as long as the NATS server.
        case memory
    }

    /// The most appends waiting for their acks by default.
    public static let defaultMaxPendingAppends = 4096

    /// The storage of the streams it creates.
    public let storage: Storage
    let names: ClusterSubjectNames
    let streams: JetStreamStreams
    let queue = DispatchQueue(label: "hub.jetstream-store")
    /// The appends on their way to the server (published in groups on the worker).
    let appends: JetStreamAppends
    let executor: any StoreExecutor
    let clock: HistoryClock
    let logger: Logger
    let maxPendingAppends: Int
    var pendingAppends = 0
    private(set) var closed = false
    private var logs: [String: JetStreamLog] = [:]
    /// The running pipelines' checkpoints (used on the worker).
    let checkpoints: JetStreamCheckpoints
    /// The appends of the commit being gathered (``commit(checkpoint:pipeline:appending:completion:)``).
    var transaction: [JetStreamAppends.Append]?

    /// A store over `connection`'s JetStream, creating streams with `storage` under
    /// `names`; results come back through `executor`; values are stamped by `clock`;
    /// each JetStream request waits `timeout` at most. Give it a connection of its own
    /// made with ``NATSConnection/Options/sendImmediately``: a group of appends is then
    /// written at once, instead of after libnats's flusher's millisecond.
    public init(
        connection: NATSConnection, names: ClusterSubjectNames = ClusterSubjectNames(), storage: Storage,
        executor: any StoreExecutor, clock: @escaping HistoryClock = systemHistoryClock,
        timeout: Duration = .seconds(5), maxPendingAppends: Int = JetStreamStore.defaultMaxPendingAppends,
        logger: Logger
    ) throws(NATSError) {
        self.names = names
        self.storage = storage
        self.executor = executor
        self.clock = clock
        self.logger = logger
        self.maxPendingAppends = max(1, maxPendingAppends)
        streams = try JetStreamStreams(connection: connection, timeout: timeout)
        checkpoints = JetStreamCheckpoints(connection: connection)
        appends = JetStreamAppends(streams: streams, executor: executor, queue: queue, checkpoints: checkpoints)
    }

    /// Binds the subject's stream (creating it with a new epoch when there is none) and
    /// applies `retention` to it. Waits for the server (see the type's notes).
    public func openLog(subject name: String, retention: HistoryRetention) throws(HubError) -> any SubjectLog {
        guard !closed else { throw HubError(.internal, "the JetStream store is closed") }
        let stream = names.historyStream(name)
        let subject = retention.keepsLatestPerKey ? names.tableKeys(name) : names.history(name)
        let streams = self.streams
        let storage = self.storage
        let appends = self.appends
        let result: Result<JetStreamStreams.Opened, NATSError> = queue.sync {
            appends.publishAdded()
            return Result { () throws(NATSError) in try streams.open(stream: stream, subject: subject, retention: retention, storage: storage) }
        }
        let opened: JetStreamStreams.Opened
        switch result {
        case let .success(value): opened = value
        case let .failure(error): throw Self.hubError(error)
        }
        if let log = logs[name], log.epoch == opened.epoch {
            log.retention = retention
            return log
        }
        let names = self.names
        let log = JetStreamLog(
            store: self, stream: stream, subject: subject, retention: retention, opened: opened,
            keySubject: retention.keepsLatestPerKey ? { key in names.tableKey(name, key: key) } : nil)
        logs[name] = log
        // Every node follows a table's stream, so that its table has the other nodes' changes.
        if retention.keepsLatestPerKey { try log.follow() }
        return log
    }

    /// Deletes the subject's stream, after the appends already made to it.
    public func removeLog(subject name: String) throws(HubError) {
        guard !closed else { throw HubError(.internal, "the JetStream store is closed") }
        logs.removeValue(forKey: name)?.unfollow()
        let stream = names.historyStream(name)
        let (streams, logger) = (self.streams, self.logger)
        request {
            do throws(NATSError) {
                try streams.delete(stream: stream)
            } catch {
                logger.error("could not delete the stream of a removed subject", metadata: ["stream": "\(stream)", "error": "\(error)"])
            }
        }
    }

    /// Lets go of the subject's log, leaving its stream: another node deleted the subject
    /// and removed the stream (and may have made the next one already).
    public func forgetLog(subject name: String) throws(HubError) {
        guard !closed else { throw HubError(.internal, "the JetStream store is closed") }
        logs.removeValue(forKey: name)?.unfollow()
    }

    /// Runs `body` on the loop once the requests made so far (appends, a stream's
    /// deletion) are done: what another node does after hearing of it finds them done.
    public func afterRequestsMadeSoFar(_ body: @escaping () -> Void) {
        request({}, then: body)
    }

    /// The last sequence of the subject's stream once this node's appends made so far
    /// are stored (`nil` when the subject is not open here or the request failed): what
    /// a `complete` of the subject ends after on every node.
    public func lastSequence(subject name: String, completion: @escaping (UInt64?) -> Void) {
        guard !closed, let log = logs[name] else { return completion(nil) }
        log.streamLastSequence(completion)
    }

    /// Calls `completion` on the loop once the subject's log has reported every value
    /// through `sequence` (following its stream for as long as that takes), or at once
    /// when the subject is not open here.
    public func catchUp(subject name: String, through sequence: UInt64, completion: @escaping () -> Void) {
        guard let log = logs[name] else { return completion() }
        log.catchUp(through: sequence, completion)
    }

    /// Follows (`true`) or stops following the stream of the subject `name` for the values
    /// other nodes store, which its log then reports through ``SubjectLog/onCommit``: a
    /// node follows a subject while it has subscribers of it. The values come by fetches
    /// of at most ``JetStreamFollower/window`` (64) messages, the next one asked for only
    /// once the previous one was taken on the loop. Does nothing for a subject not open.
    public func setFollowing(_ following: Bool, subject name: String) throws(HubError) {
        // A table's log follows its stream for as long as it is open.
        guard let log = logs[name], !log.compactsPerKey else { return }
        if following { try log.follow() } else { log.unfollow() }
    }

    /// Runs `work` on the worker, after publishing the appends made so far (so that it
    /// sees them: the worker's requests keep the order the loop made them in), then
    /// `done` with its result on the loop.
    func request<T>(_ work: @escaping @Sendable () -> T, then done: ((T) -> Void)? = nil) {
        let (appends, executor) = (self.appends, self.executor)
        let done = done.map { LoopBound($0, eventLoop: executor) }
        queue.async {
            appends.publishAdded()
            let result = LoopBound(work(), eventLoop: executor)
            guard let done else { return }
            executor.execute { done.value(result.value) }
        }
    }

    // MARK: Checkpoints

    /// Reads the pipeline's checkpoint from the bucket after the commits made so far,
    /// publishing again the values its record still holds (see ``JetStreamCheckpoints``).
    public func loadCheckpoint(pipeline: String, completion: @escaping (Result<Value?, HubError>) -> Void) {
        guard !closed else { return completion(.failure(HubError(.internal, "the JetStream store is closed"))) }
        let (checkpoints, streams) = (self.checkpoints, self.streams)
        request({ checkpoints.load(pipeline, streams: streams) }, then: completion)
    }

    /// Gathers the appends `body` makes and commits them with `checkpoint` on the worker,
    /// in their place among the other appends (see ``JetStreamAppends``).
    public func commit(
        checkpoint: Value, pipeline: String, appending body: () -> Void,
        completion: @escaping (Result<Void, HubError>) -> Void
    ) {
        guard !closed, transaction == nil else {
            completion(.failure(HubError(.internal, closed ? "the JetStream store is closed" : "a commit inside another")))
            return
        }
        transaction = []
        body()
        let gathered = transaction ?? []
        transaction = nil
        appends.addCommit(JetStreamAppends.Commit(pipeline: pipeline, checkpoint: checkpoint, appends: gathered, completion: completion))
    }

    /// Waits for the requests under way (every append made so far is acked or failed).
    public func close() {
        guard !closed else { return }
        closed = true
        for log in logs.values { log.unfollow() }
        logs.removeAll()
        let appends = self.appends
        queue.sync { appends.publishAdded() }
    }

    /// The hub's error for a failed JetStream request: `storage_unavailable` when NATS or
    /// JetStream did not take it (unreachable, closed, not answered in time: sending again
    /// later may succeed), `internal` for the rest.
    static func hubError(_ error: NATSError) -> HubError {
        switch error.code {
        case .publishFailed, .flushFailed, .closed, .jetStreamFailed:
            return HubError(.storageUnavailable, "the JetStream store is unavailable: \(error)")
        case .invalidURL, .connectFailed, .subscribeFailed:
            return HubError(.internal, "the JetStream store failed: \(error)")
        }
    }
}
