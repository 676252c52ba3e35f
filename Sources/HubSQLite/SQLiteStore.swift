import CSQLite
import CSQLiteVFS
import DequeModule
import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire

/// The durable store: subjects' history, last value and epoch in one SQLite database
/// in WAL mode (`hub.sqlite3` under the storage directory), so that they survive a
/// restart of the broker, `kill -9` included.
///
/// **Where the work runs.** SQLite calls block, so none runs on the hub's loop after
/// start-up: a writer thread commits appends in groups (see ``SQLiteWriter``), a reader
/// thread serves history pages on a connection of its own, and both hand their results
/// back through the loop's queue (``StoreExecutor``). A slow disk delays the acks of
/// durable values and the replays of durable history, never the loop, so subscribers
/// of other subjects do not notice it. Opening the database (and reading every
/// subject's epoch and last value) is the only I/O that blocks its caller: the
/// broker does it once, before it listens.
///
/// **What an ack means** (``Sync``): with ``Sync/full`` (the default) the group's
/// commit has been fsynced (`synchronous=FULL`): an acknowledged value survives a crash
/// of the broker and of the machine, a power loss included. With ``Sync/normal`` the
/// commit is in the WAL file, written to the operating system but not fsynced
/// (`synchronous=NORMAL`): it survives a crash of the broker (`kill -9`), not of the
/// machine, which is the guarantee a single JetStream server gives by default.
///
/// Its members are used on the hub's loop, except ``close()``.
public final class SQLiteStore: SubjectStore {
    /// The database file's name under the storage directory.
    public static let fileName = "hub.sqlite3"
    /// The SQLite VFS of a store that keeps its database to itself: `unix-excl`, which
    /// takes the database file's POSIX lock once, exclusively, and keeps every later lock,
    /// the WAL index's included, in the process. The broker owns its database while it
    /// runs (the ``StorageLock`` refuses a second one), so its connections need no `fcntl`
    /// to keep one another out, where SQLite's default VFS makes six calls a transaction:
    /// a lone value's commit takes a fifth (1 KiB) to a quarter (64 B) less CPU
    /// (`sqlite-floor` paired with the default VFS, README).
    static let exclusiveVFS = "unix-excl"
    /// The most bytes of values waiting for the writer before appends are refused
    /// with `limit_exceeded` (the disk is that far behind).
    public static let defaultMaxPendingBytes = 64 << 20

    /// The database file.
    public let path: String
    /// What the checks at open found and did (damage refused is an error instead), for the log.
    public private(set) var integrityNotices: [String] = []
    /// The subjects whose damaged history was set aside at open, under a new epoch.
    public private(set) var quarantined: [String] = []
    /// Why durable appends fail now (a full disk, I/O errors), `nil` while they succeed:
    /// set by a failed commit, cleared by the next one that succeeds.
    public internal(set) var unavailableReason: String?
    /// The sync policy.
    public let sync: Sync
    /// The SQLite VFS the store's connections use.
    let vfs: String
    let lock: StorageLock
    let writer: SQLiteWriter
    let checkpointer: SQLiteCheckpointer
    let reader: SQLiteReader
    let maxPendingBytes: Int
    let executor: any StoreExecutor
    let box: LoopSide
    /// Whether the loop commits its passes' groups when the writer is idle.
    let commitsOnLoop: Bool
    /// What this pass queued, committed after it (``commitsOnLoop``), and its values' bytes.
    var loopGroup: [SQLiteWriter.Operation] = []
    var loopGroupBytes = 0
    var loopCommitScheduled = false
    /// Appends handed to the writer thread whose outcomes have not come back yet. A log
    /// completes its appends in order, oldest first, so the loop commits nothing itself
    /// while the thread's outcomes are on their way to it: they would complete the wrong
    /// appends.
    var appendsWithThread = 0
    /// Groups the loop committed itself, for tests.
    public internal(set) var loopCommits = 0
    /// The most bytes of values the loop commits itself; a larger group goes to the thread.
    static let maxLoopGroupBytes = 1 << 20
    var known: [String: SQLiteLog.Restored]
    var logs: [String: SQLiteLog] = [:]
    var byID: [Int64: SQLiteLog] = [:]
    var nextID: Int64
    var pendingBytes = 0
    var reads: [UInt64: (subject: String, completion: (Result<[HistoryEntry], HubError>) -> Void)] = [:]
    var probing = false
    var lastProbe: UInt64 = 0
    var unavailableSince: UInt64 = 0
    var nextRead: UInt64 = 0
    var closed = false
    /// Each running pipeline's last checkpoint stored.
    var pipelineCheckpoints: [String: Value]
    /// Checkpoints on their way to the disk, by pipeline, oldest first, with their completions.
    var committing: [String: Deque<(checkpoint: Value, completion: (Result<Void, HubError>) -> Void)>] = [:]
    /// Loads of a checkpoint waiting for the commits under way for its pipeline.
    var loadsWaiting: [String: [(Result<Value?, HubError>) -> Void]] = [:]
    /// The operations of the commit being gathered (``commit(checkpoint:pipeline:appending:completion:)``).
    var transaction: [SQLiteWriter.Operation]?
    var transactionBytes = 0

    /// Opens (creating them if needed) the directory and its database, reads every
    /// subject's epoch and last value, and starts the writer, reader and checkpointer
    /// threads; the writer's and reader's results come back through `executor`. Blocks on
    /// the disk: call it at start-up.
    ///
    /// `commitOnLoop` (by default: yes) has a lone value that one pass of the loop
    /// appended committed by the loop itself when the writer thread is idle (see
    /// ``SQLiteWriter``): a lone publisher's ack then waits for no other thread. Only with
    /// `sync` ``Sync/normal``, whose commits write to the operating system without an
    /// fsync; the writer thread commits everything else, and always with ``Sync/full``.
    /// A commit on the loop that takes longer than `loopCommitBudget` (a disk or a machine
    /// that slows down) leaves the next second's commits to the thread.
    ///
    /// `shared` lets other processes open the database while the store is open (the
    /// `sqlite3` shell, an online `.backup`), at the cost of SQLite's locking through the
    /// file system at every transaction; otherwise (the default) they get `database is
    /// locked` until ``close()``.
    ///
    /// Before it serves the database the store checks it (``SQLiteIntegrity``): the WAL's
    /// frames, every page's checksum (kept in 8 reserved bytes of each page by the
    /// checksum VFS; a database an earlier version made is converted once, by a VACUUM),
    /// the file's length and `PRAGMA quick_check`. Damage is refused with an error that
    /// names the file and the subjects, or quarantined (`onCorruption`). Pages read later
    /// are checked too: a damaged one fails its read with `storage_unavailable`, never
    /// reaches a subscriber. `faults` injects disk faults, for tests.
    public init(
        directory: String, sync: Sync = .full, executor: any StoreExecutor, clock: @escaping HistoryClock = systemHistoryClock,
        maxPendingBytes: Int = SQLiteStore.defaultMaxPendingBytes, checkpoint: Checkpointing = Checkpointing(),
        commitOnLoop: Bool? = nil, loopCommitBudget: Duration = .milliseconds(2), shared: Bool = false,
        onCorruption: CorruptionPolicy = .refuse, faults: FaultInjection? = nil
    ) throws(SQLiteError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SQLiteError(code: -1, message: "cannot create the storage directory \(directory): \(error.localizedDescription)")
        }
        let path = directory.hasSuffix("/") ? directory + SQLiteStore.fileName : directory + "/" + SQLiteStore.fileName
        self.path = path
        // Offsets are counted by this process's writer: two brokers on one database
        // would hand out the same offsets, so the second one is refused.
        let bootID = faults?.bootID ?? SQLiteStore.currentBootID()
        lock = try StorageLock(path: path + ".lock", boot: bootID)
        self.sync = sync
        self.maxPendingBytes = maxPendingBytes
        self.executor = executor
        commitsOnLoop = sync == .normal && commitOnLoop ?? true

        let vfs = try SQLiteVFS.name(shared: shared, faults: faults)
        self.vfs = vfs
        let sameBoot = bootID != nil && lock.previousBoot == bootID
        let integrity = try SQLiteIntegrity.check(
            path: path, vfs: vfs, sync: sync, policy: onCorruption, sameBoot: sameBoot)
        integrityNotices = integrity.notices
        quarantined = integrity.quarantined
        let isNew = (SQLiteIntegrity.fileSize(path) ?? 0) == 0
        let connection = try SQLiteConnection(path: path, vfs: vfs)
        // 4 KiB pages for a new database (an existing one keeps its own): a commit rewrites
        // the last leaf of the history, and a lone value costs one page of WAL. 16 KiB pages
        // (versions before 3) wrote four times the bytes for it, and lost at window 1
        // without gaining at window 64 (bench-durable-vs-jetstream, README).
        try connection.execute("PRAGMA page_size = 4096")
        // 8 bytes at the end of each page for its checksum: set (after the page size,
        // which resets it, and before the first transaction, after which it waits for a
        // VACUUM) before a new database's first page is written; an older database gets
        // them with a VACUUM, once.
        _ = hub_sqlite_reserve_bytes(UnsafeMutableRawPointer(connection.handle), 8)
        try SQLiteStore.checkNotLockedElsewhere(connection, shared: shared)
        if !isNew, SQLiteStore.reservedBytes(path) != 8 {
            try connection.execute("VACUUM")
            integrityNotices.append("\(path): converted to pages with checksums (VACUUM)")
        }
        // WAL: readers never block the writer; a commit appends to the WAL file.
        try connection.execute("PRAGMA journal_mode = WAL")
        // 16 MB of page cache (SQLite's default is 2 MB): the pages a commit touches stay cached.
        try connection.execute("PRAGMA cache_size = -16384")
        guard try connection.pragma("journal_mode")?.lowercased() == "wal" else {
            throw SQLiteError(code: -1, message: "\(path): the database cannot use WAL mode")
        }
        let synchronous = "PRAGMA synchronous = \(sync == .full ? "FULL" : "NORMAL")"
        try connection.execute(synchronous)
        connection.setBusyTimeout(milliseconds: SQLiteWriter.busyTimeoutMilliseconds)
        try connection.execute(SQLiteSchema.create)
        let version = try connection.prepare(SQLiteSchema.schemaVersion)
        if try version.step(), let found = version.text(0), !SQLiteSchema.readableVersions.contains(found) {
            throw SQLiteError(
                code: -1,
                message: "\(path) has schema version \(found); this broker reads versions \(SQLiteSchema.readableVersionList)")
        }
        version.reset()
        let composite = try connection.prepare(SQLiteSchema.hasCompositeEntries)
        let isComposite = try composite.step() && composite.int64(0) > 0
        composite.reset()
        if isComposite { try SQLiteStore.migrateEntries(connection, path: path) }
        let countColumn = try connection.prepare(SQLiteSchema.hasCountColumn)
        let hasCount = try countColumn.step() && countColumn.int64(0) > 0
        countColumn.reset()
        if !hasCount { try connection.execute(SQLiteSchema.addCountColumn) }
        try connection.execute(SQLiteSchema.markVersion)
        if let reason = try SQLiteStore.markOpen(connection, bootID: bootID, sync: sync) {
            integrityNotices.append(reason)
        }

        var known: [String: SQLiteLog.Restored] = [:]
        var states: [Int64: SQLiteWriter.SubjectState] = [:]
        var maxID: Int64 = 0
        let load = try connection.prepare(SQLiteSchema.loadSubjects)
        let lastEntry = try connection.prepare(SQLiteSchema.lastEntry)
        while try load.step() {
            let id = load.int64(0)
            guard let name = load.text(1), let epoch = load.text(2) else { continue }
            // The row's copy, unless the entries go further (the row is saved only before an expiry).
            let rowOffset = UInt64(max(0, load.int64(3)))
            var lastOffset = rowOffset
            var lastTime = load.int64(4)
            var lastValue: Value?
            if !load.isNull(5) {
                lastValue = load.withBlob(5) { raw in try? Value.parse(raw) }
            }
            lastEntry.bind(1, id)
            if try lastEntry.step(), UInt64(max(0, lastEntry.int64(0))) > rowOffset {
                lastOffset = UInt64(lastEntry.int64(0))
                lastTime = lastEntry.int64(1)
                let count = max(1, lastEntry.int64(3))
                lastValue = lastEntry.withBlob(2) { raw in
                    try? SQLiteSchema.values(ofRow: raw, count: count, offset: lastOffset).last
                }
            }
            lastEntry.reset()
            known[name] = SQLiteLog.Restored(id: id, epoch: epoch, lastOffset: lastOffset, lastValue: lastValue)
            states[id] = SQLiteWriter.SubjectState(
                lastOffset: lastOffset, lastTime: lastTime, retention: HistoryRetention(), firstTime: nil,
                rowOffset: rowOffset)
            maxID = max(maxID, id)
        }
        load.reset()
        let names = Dictionary(known.map { ($0.value.id, $0.key) }, uniquingKeysWith: { first, _ in first })
        let loadRows = try connection.prepare(SQLiteSchema.loadTableRows)
        while try loadRows.step() {
            guard let name = names[loadRows.int64(0)], let key = loadRows.text(1),
                  let value = loadRows.withBlob(3, { raw in try? Value.parse(raw) })
            else { continue }
            known[name]?.rows[key] = HistoryEntry(offset: UInt64(max(0, loadRows.int64(2))), value: value)
        }
        loadRows.reset()
        self.known = known
        nextID = maxID + 1
        var checkpoints: [String: Value] = [:]
        let loadCheckpoints = try connection.prepare(SQLiteSchema.loadCheckpoints)
        while try loadCheckpoints.step() {
            guard let pipeline = loadCheckpoints.text(0) else { continue }
            if let state = loadCheckpoints.withBlob(1, { raw in try? Value.parse(raw) }) { checkpoints[pipeline] = state }
        }
        loadCheckpoints.reset()
        pipelineCheckpoints = checkpoints

        // Results cross to the loop through its queue; the box is only opened there.
        let box = LoopSide()
        self.box = box
        // Checkpoints on a connection of their own, with the same synchronous setting
        // (it decides the checkpoints' fsyncs).
        let checkpointing = try SQLiteConnection(path: path, vfs: vfs)
        try checkpointing.execute(synchronous)
        let pageSize = Int(try connection.pragma("page_size") ?? "") ?? 4096
        checkpointer = SQLiteCheckpointer(connection: checkpointing, thresholds: checkpoint.pages(ofSize: pageSize))
        writer = try SQLiteWriter(
            connection: connection, subjects: states, clock: clock, checkpointer: checkpointer,
            loopCommitBudget: loopCommitBudget
        ) {
            outcomes in executor.execute { box.store?.threadCommitted(outcomes) }
        }
        reader = try SQLiteReader(connection: try SQLiteConnection(path: path, vfs: vfs), clock: clock) { id, result in
            executor.execute { box.store?.answered(read: id, result) }
        }
        box.store = self
        writer.start(name: "hub-sqlite-writer")
        reader.start(name: "hub-sqlite-reader")
        checkpointer.start(name: "hub-sqlite-checkpointer")
    }

    /// The WAL checkpoints run since the store opened, in the background and inline (any thread).
    public var checkpoints: Int { checkpointer.checkpoints }

    /// The store as seen from the loop, for the threads' hand-offs (opened on the loop only).
    final class LoopSide: @unchecked Sendable {
        weak var store: SQLiteStore?
    }

    // MARK: SubjectStore

    public func openLog(subject name: String, retention: HistoryRetention) throws(HubError) -> any SubjectLog {
        guard !closed else { throw HubError(.internal, "the durable store is closed") }
        if let log = logs[name] {
            log.retention = retention
            enqueue(.retain(subject: log.id, retention: retention))
            return log
        }
        let log: SQLiteLog
        if let restored = known.removeValue(forKey: name) {
            log = SQLiteLog(store: self, name: name, restored: restored, retention: retention)
            enqueue(.retain(subject: restored.id, retention: retention))
        } else {
            let id = try newSubjectID()
            let epoch = MemoryStore.newEpoch()
            log = SQLiteLog(
                store: self, name: name, restored: SQLiteLog.Restored(id: id, epoch: epoch, lastOffset: 0, lastValue: nil),
                retention: retention)
            enqueue(.create(subject: id, name: name, epoch: epoch, retention: retention))
        }
        logs[name] = log
        byID[log.id] = log
        return log
    }

    /// An id for a new subject: the next one, or, once ids have reached the largest an
    /// entry's key holds, the smallest that no subject uses (a removed subject's id is
    /// free once its removal is queued: the writer removes its entries first).
    func newSubjectID() throws(HubError) -> Int64 {
        if nextID <= SQLiteSchema.maxSubjectID {
            defer { nextID += 1 }
            return nextID
        }
        var used = Set(byID.keys)
        for restored in known.values { used.insert(restored.id) }
        guard let free = (1...SQLiteSchema.maxSubjectID).first(where: { !used.contains($0) }) else {
            throw HubError(.limitExceeded, "the durable store holds \(SQLiteSchema.maxSubjectID) subjects, its most")
        }
        return free
    }

    public func removeLog(subject name: String) throws(HubError) {
        guard !closed else { throw HubError(.internal, "the durable store is closed") }
        let id: Int64
        if let log = logs.removeValue(forKey: name) {
            log.isRetired = true
            if log.isSettled { byID[log.id] = nil }
            id = log.id
        } else if let restored = known.removeValue(forKey: name) {
            id = restored.id
        } else {
            return
        }
        enqueue(.remove(subject: id))
    }

    /// Commits what waits, stops the threads and closes the database (another process
    /// can open it from then on), then gives up the storage directory.
    public func close() {
        guard !closed else { return }
        closed = true
        submitLoopGroup()
        writer.stop()
        reader.stop()
        checkpointer.stop()
        SQLiteStore.markClosed(path: path, vfs: vfs)
        lock.release()
    }
}
