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
    /// When a commit counts as stored.
    public enum Sync: String, Sendable, CaseIterable {
        /// fsync at every group commit: survives a power loss.
        case full
        /// Written to the operating system at every group commit, fsynced at checkpoints:
        /// survives a crash of the broker, not of the machine.
        case normal
    }

    /// When the WAL is copied into the database (see ``SQLiteCheckpointer``), in pages of
    /// the WAL: by default 4 MiB and 32 MiB of the database's pages (4 KiB for a database
    /// this broker creates; 16 KiB for one an earlier version created).
    public struct Checkpointing: Sendable, Equatable {
        /// Once this many pages were added to the WAL since the last checkpoint, a thread of
        /// the store checkpoints in the background (`nil`: 4 MiB of pages, as SQLite's
        /// default of 1,000 4-KiB pages).
        public var backgroundPages: Int32?
        /// From this many, the writer checkpoints right after its commit, holding that
        /// commit's acks: the background has fallen behind (`nil`: 32 MiB of pages). It
        /// bounds the WAL.
        public var inlinePages: Int32?

        /// Background checkpoints from `backgroundPages`, inline ones from `inlinePages`.
        public init(backgroundPages: Int32? = nil, inlinePages: Int32? = nil) {
            self.backgroundPages = backgroundPages.map { max(1, $0) }
            self.inlinePages = inlinePages.map { max(1, $0) }
        }

        /// The thresholds in pages of `pageSize` bytes.
        func pages(ofSize pageSize: Int) -> (background: Int32, inline: Int32) {
            let size = max(512, pageSize)
            return (backgroundPages ?? Int32(clamping: (4 << 20) / size), inlinePages ?? Int32(clamping: (32 << 20) / size))
        }
    }

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
    public private(set) var unavailableReason: String?
    /// The sync policy.
    public let sync: Sync
    /// The SQLite VFS the store's connections use.
    private let vfs: String
    private let lock: StorageLock
    private let writer: SQLiteWriter
    private let checkpointer: SQLiteCheckpointer
    private let reader: SQLiteReader
    private let maxPendingBytes: Int
    private let executor: any StoreExecutor
    private let box: LoopSide
    /// Whether the loop commits its passes' groups when the writer is idle.
    private let commitsOnLoop: Bool
    /// What this pass queued, committed after it (``commitsOnLoop``), and its values' bytes.
    private var loopGroup: [SQLiteWriter.Operation] = []
    private var loopGroupBytes = 0
    private var loopCommitScheduled = false
    /// Appends handed to the writer thread whose outcomes have not come back yet. A log
    /// completes its appends in order, oldest first, so the loop commits nothing itself
    /// while the thread's outcomes are on their way to it: they would complete the wrong
    /// appends.
    private var appendsWithThread = 0
    /// Groups the loop committed itself, for tests.
    public private(set) var loopCommits = 0
    /// The most bytes of values the loop commits itself; a larger group goes to the thread.
    static let maxLoopGroupBytes = 1 << 20
    private var known: [String: SQLiteLog.Restored]
    private var logs: [String: SQLiteLog] = [:]
    private var byID: [Int64: SQLiteLog] = [:]
    private var nextID: Int64
    private var pendingBytes = 0
    private var reads: [UInt64: (subject: String, completion: (Result<[HistoryEntry], HubError>) -> Void)] = [:]
    private var probing = false
    private var lastProbe: UInt64 = 0
    private var unavailableSince: UInt64 = 0
    private var nextRead: UInt64 = 0
    private var closed = false
    /// Each running pipeline's last checkpoint stored.
    private var pipelineCheckpoints: [String: Value]
    /// Checkpoints on their way to the disk, by pipeline, oldest first, with their completions.
    private var committing: [String: Deque<(checkpoint: Value, completion: (Result<Void, HubError>) -> Void)>] = [:]
    /// Loads of a checkpoint waiting for the commits under way for its pipeline.
    private var loadsWaiting: [String: [(Result<Value?, HubError>) -> Void]] = [:]
    /// The operations of the commit being gathered (``commit(checkpoint:pipeline:appending:completion:)``).
    private var transaction: [SQLiteWriter.Operation]?
    private var transactionBytes = 0

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

    /// Takes and drops the write lock once, so that a database another process keeps
    /// locked is refused at once with what to do, rather than by whichever statement
    /// meets the lock first. Kept to the store (not `shared`), the database must not be
    /// open anywhere else; shared, no other process may be writing to it.
    private static func checkNotLockedElsewhere(_ connection: SQLiteConnection, shared: Bool) throws(SQLiteError) {
        do throws(SQLiteError) {
            try connection.execute("BEGIN IMMEDIATE; ROLLBACK")
        } catch where error.code & 0xFF == SQLITE_BUSY {
            let reason = shared
                ? "another process is writing to the database"
                : "another process has the database open, and the broker keeps it to itself while it runs"
                    + " (storage.shared: true lets other processes in)"
            throw SQLiteError(code: error.code, message: "cannot open \(connection.path): \(reason)")
        }
    }

    /// The reserved bytes a page of the database at `path` keeps (its header's byte 20).
    static func reservedBytes(_ path: String) -> Int? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 100), header.count == 100 else { return nil }
        return Int(header[header.startIndex + 20])
    }

    /// The WAL checkpoints run since the store opened, in the background and inline (any thread).
    public var checkpoints: Int { checkpointer.checkpoints }

    /// Moves the `entries` of a version 1 or 2 database to version 3's keys (see
    /// ``SQLiteSchema``), all or nothing; refuses one whose ids or offsets do not fit them.
    private static func migrateEntries(_ connection: SQLiteConnection, path: String) throws(SQLiteError) {
        let outOfRange = try connection.prepare(SQLiteSchema.outOfRange)
        let outside = try outOfRange.step() ? outOfRange.int64(0) : 0
        outOfRange.reset()
        if outside > 0 {
            throw SQLiteError(
                code: -1,
                message: "\(path) holds subject ids above \(SQLiteSchema.maxSubjectID) or offsets above \(SQLiteSchema.maxOffset), "
                    + "which schema version \(SQLiteSchema.version) cannot key")
        }
        do throws(SQLiteError) {
            try connection.execute(SQLiteSchema.migrateEntries)
        } catch {
            try? connection.execute("ROLLBACK")
            throw SQLiteError(code: error.code, message: "\(path): moving the history to schema version \(SQLiteSchema.version) failed: \(error.message)")
        }
    }

    /// The store as seen from the loop, for the threads' hand-offs (opened on the loop only).
    private final class LoopSide: @unchecked Sendable {
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
    private func newSubjectID() throws(HubError) -> Int64 {
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

    // MARK: Runs, and machines that stopped during one

    /// This boot of the machine (Linux's `boot_id`), `nil` where unknown.
    static func currentBootID() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else { return nil }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty ? nil : id
    }

    /// Records, synced, that the store is open on this boot with `sync`. When the previous
    /// run was open with `sync: normal` on another boot and never closed, the machine
    /// stopped under it (a power loss, a kernel crash): values acknowledged since the last
    /// checkpoint may be gone, and new values would take their offsets under the same
    /// epoch. Every subject then begins a new epoch, so that a resuming subscriber is told
    /// (`recovered: false`) instead of silently reading other values at offsets it had
    /// seen; returns what to log.
    private static func markOpen(_ connection: SQLiteConnection, bootID: String?, sync: Sync) throws(SQLiteError) -> String? {
        var previous: [Substring] = []
        let read = try connection.prepare("SELECT value FROM meta WHERE key = 'run'")
        if try read.step(), let text = read.text(0) { previous = text.split(separator: " ") }
        read.reset()
        var notice: String?
        if let bootID, previous.count == 3, previous[1] == "open", previous[2] == Sync.normal.rawValue,
            previous[0] != Substring(bootID)
        {
            var ids: [Int64] = []
            let list = try connection.prepare("SELECT id FROM subjects")
            while try list.step() { ids.append(list.int64(0)) }
            list.reset()
            let renew = try connection.prepare("UPDATE subjects SET epoch = ?2 WHERE id = ?1")
            for id in ids {
                renew.bind(1, id)
                renew.bind(2, MemoryStore.newEpoch())
                try renew.run()
            }
            notice = "the machine stopped while the store was open with storage.sync: normal: values acknowledged "
                + "since its last checkpoint may be lost, so every durable subject (\(ids.count)) begins a new epoch"
        }
        try connection.execute("PRAGMA synchronous = FULL")
        let mark = try connection.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('run', ?1)")
        mark.bind(1, "\(bootID ?? "-") open \(sync.rawValue)")
        try mark.run()
        try connection.execute("PRAGMA synchronous = \(sync == .full ? "FULL" : "NORMAL")")
        return notice
    }

    /// Records that the store closed cleanly (best effort: a store that cannot write
    /// now is treated as one that stopped).
    private static func markClosed(path: String, vfs: String) {
        guard let connection = try? SQLiteConnection(path: path, vfs: vfs) else { return }
        defer { connection.close() }
        try? connection.execute("PRAGMA synchronous = FULL")
        try? connection.execute("UPDATE meta SET value = replace(value, ' open ', ' closed ') WHERE key = 'run'")
    }

    // MARK: For the logs

    /// Queues `value` for the next group commit; refused when too much is waiting already.
    func append(_ value: Value, for log: SQLiteLog) throws(HubError) -> Int {
        guard !closed else { throw HubError(.internal, "the durable store is closed") }
        guard !log.isRetired else { throw HubError(.completed, "the subject was deleted: its history is gone") }
        let bytes = value.estimatedBytes
        // A pipeline's commit is not refused by halves: its values go in with it (the
        // pipeline bounds how many it gathers).
        guard pendingBytes + bytes <= maxPendingBytes || pendingBytes == 0 || transaction != nil else {
            throw HubError(
                .limitExceeded, "the durable store is behind: \(pendingBytes) bytes are waiting for the disk",
                data: ["limit": .int(Int64(maxPendingBytes))])
        }
        pendingBytes += bytes
        enqueue(.append(subject: log.id, value: value), bytes: bytes)
        return bytes
    }

    /// Queues `operation` for the writer: for the loop's commit after this pass
    /// (``commitsOnLoop``), or for the thread.
    private func enqueue(_ operation: SQLiteWriter.Operation, bytes: Int = 0) {
        if transaction != nil {
            transaction!.append(operation)
            transactionBytes += bytes
            return
        }
        guard commitsOnLoop else {
            submit([operation], appends: operation.isAppend ? 1 : 0)
            return
        }
        loopGroup.append(operation)
        loopGroupBytes += bytes
        guard !loopCommitScheduled else { return }
        loopCommitScheduled = true
        executor.executeAtEndOfPass { [box] in box.store?.commitLoopGroup() }
    }

    /// After the pass: commits what it queued on the loop, if the writer is idle (the
    /// acks go out at the end of this pass), or hands it to the writer thread.
    ///
    /// The loop commits a group of one value at most: a lone publisher waiting for its
    /// ack. A pass that appended several comes from values streaming in (a pipelining
    /// publisher, many publishers), and the thread commits those, gathering what arrives
    /// during each commit into the next group while the loop goes on reading: a commit
    /// per pass on the loop made groups small and commits many (window 64 of
    /// bench-durable-vs-jetstream, 1-KiB values: 0.47-0.54x JetStream against 0.62x).
    /// Such a group goes to the thread from the loop's next pass
    /// (``StoreExecutor/executeSoon(_:)``), with what that pass appended before it.
    /// Handed over at the end of its own pass, it made throughput lower at window 64 with
    /// 64-B values (75-80 k/s against 88-91 k/s); waiting for the end of the next pass
    /// made one group of the whole window (the publisher waiting on every commit of 64
    /// values: 0.72-0.84x JetStream against 0.88-1.07x).
    private func commitLoopGroup() {
        loopCommitScheduled = false
        guard !closed, !loopGroup.isEmpty else { return }
        let values = loopGroup.count(where: \.isAppend)
        if values > 1 {
            loopCommitScheduled = true
            executor.executeSoon { [box] in box.store?.handOverLoopGroup() }
            return
        }
        let bytes = loopGroupBytes
        let group = takeLoopGroup()
        if bytes <= SQLiteStore.maxLoopGroupBytes, appendsWithThread == 0, let outcomes = writer.commitOnLoop(group) {
            loopCommits += 1
            committed(outcomes)
            // The acks go out now: the pass read the value, so write coalescing would
            // hold them for the next pass, which only polls.
            executor.answered()
        } else {
            submit(group, appends: values)
        }
    }

    /// From the loop's next pass: hands the group of several values, with what that pass
    /// appended before, to the writer thread.
    private func handOverLoopGroup() {
        loopCommitScheduled = false
        guard !closed else { return }
        submitLoopGroup()
    }

    /// Hands what the loop queued, if anything, to the writer thread.
    private func submitLoopGroup() {
        guard !loopGroup.isEmpty else { return }
        let group = takeLoopGroup()
        submit(group, appends: group.count(where: \.isAppend))
    }

    /// The operations queued on the loop, which start over empty.
    private func takeLoopGroup() -> [SQLiteWriter.Operation] {
        defer {
            loopGroup = []
            loopGroupBytes = 0
        }
        return loopGroup
    }

    // MARK: Checkpoints

    /// The pipeline's last checkpoint stored, once the commits under way for it are done.
    public func loadCheckpoint(pipeline: String, completion: @escaping (Result<Value?, HubError>) -> Void) {
        guard committing[pipeline]?.isEmpty ?? true else {
            loadsWaiting[pipeline, default: []].append(completion)
            return
        }
        completion(.success(pipelineCheckpoints[pipeline]))
    }

    /// Gathers the appends `body` makes and `checkpoint` into one group of the writer: one
    /// transaction (see ``SQLiteWriter``: a group is committed whole or not at all).
    public func commit(
        checkpoint: Value, pipeline: String, appending body: () -> Void,
        completion: @escaping (Result<Void, HubError>) -> Void
    ) {
        guard !closed, transaction == nil else {
            completion(.failure(HubError(.internal, closed ? "the durable store is closed" : "a commit inside another")))
            return
        }
        transaction = []
        transactionBytes = 0
        body()
        var operations = transaction ?? []
        let bytes = transactionBytes
        transaction = nil
        var json: [UInt8] = []
        checkpoint.writeJSON(into: &json)
        operations.append(.checkpoint(pipeline: pipeline, state: json))
        committing[pipeline, default: []].append((checkpoint, completion))
        guard commitsOnLoop else {
            submit(operations, appends: operations.count(where: \.isAppend))
            return
        }
        loopGroup.append(contentsOf: operations)
        loopGroupBytes += bytes
        guard !loopCommitScheduled else { return }
        loopCommitScheduled = true
        executor.executeAtEndOfPass { [box] in box.store?.commitLoopGroup() }
    }

    /// A checkpoint's outcome: its completion, then the loads that waited for it.
    private func checkpointed(_ pipeline: String, _ error: SQLiteError?) {
        guard let (checkpoint, completion) = committing[pipeline]?.popFirst() else { return }
        if committing[pipeline]?.isEmpty == true { committing[pipeline] = nil }
        if let error {
            completion(.failure(error.hubError))
        } else {
            pipelineCheckpoints[pipeline] = checkpoint
            completion(.success(()))
        }
        guard committing[pipeline] == nil, let waiting = loadsWaiting.removeValue(forKey: pipeline) else { return }
        for load in waiting { load(.success(pipelineCheckpoints[pipeline])) }
    }

    /// Hands `group`, with `appends` values in it, to the writer thread, counting them
    /// until their outcomes return.
    private func submit(_ group: [SQLiteWriter.Operation], appends: Int) {
        appendsWithThread += appends
        writer.submit(group)
    }

    /// The outcomes of a group the writer thread committed.
    private func threadCommitted(_ outcomes: [SQLiteWriter.Outcome]) {
        appendsWithThread -= outcomes.count(where: \.isAppend)
        committed(outcomes)
    }

    /// Queues a page read for `log`.
    func read(
        _ log: SQLiteLog, after: UInt64, through: UInt64, limit: Int, maxBytes: Int,
        completion: @escaping (Result<[HistoryEntry], HubError>) -> Void
    ) {
        guard !closed else {
            completion(.failure(HubError(.internal, "the durable store is closed")))
            return
        }
        nextRead += 1
        reads[nextRead] = (log.name, completion)
        // A row that straddles the size bound keeps values behind it (see SQLiteSchema).
        let size = UInt64(log.retention.size)
        let bound = log.lastOffset > size ? log.lastOffset - size : 0
        reader.submit(SQLiteReader.Request(
            id: nextRead, subject: log.id, after: max(after, bound), through: through, limit: limit, maxBytes: maxBytes,
            ttl: log.retention.ttl))
    }

    /// A group committed (or failed): each log completes its oldest pending appends.
    private func committed(_ outcomes: [SQLiteWriter.Outcome]) {
        for outcome in outcomes {
            switch outcome {
            case let .appended(subject, offset):
                unavailableReason = nil
                if let bytes = byID[subject]?.committed(offset: offset) { pendingBytes -= bytes }
            case let .failed(subject, error):
                let log = byID[subject]
                noteFailure(error)
                let hubError = error.hubError
                let named = HubError(hubError.code, "subject '\(log?.name ?? "?")': \(hubError.message)", data: hubError.data)
                if let bytes = log?.failed(named) { pendingBytes -= bytes }
            case let .checkpointed(pipeline, error):
                // A checkpoint the disk refused makes the store unavailable as an append would.
                if let error { noteFailure(error) } else { unavailableReason = nil }
                checkpointed(pipeline, error)
                continue
            case let .probed(error):
                probing = false
                if let error { noteFailure(error) } else { unavailableReason = nil }
                continue
            }
            // A removed log is forgotten once its last append has completed.
            if let subject = outcome.subject, let log = byID[subject], log.isRetired, log.isSettled { byID[log.id] = nil }
        }
    }

    /// A failed commit: the disk's or the file's failure makes the store unavailable
    /// until a commit succeeds.
    private func noteFailure(_ error: SQLiteError) {
        guard let problem = error.storageProblem else { return }
        unavailableReason = "\(problem) (\(error.description))"
        unavailableSince = DispatchTime.now().uptimeNanoseconds
    }

    /// While the store is unavailable: has the writer try a small commit, at most once a
    /// second, so that the store becomes available again without a publisher's value
    /// (``unavailableReason`` is cleared when it succeeds). Call it where readiness is asked.
    public func probeIfUnavailable() {
        guard !closed, unavailableReason != nil, !probing else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now &- lastProbe >= 1_000_000_000 else { return }
        lastProbe = now
        probing = true
        submit([.probe], appends: 0)
    }

    private func answered(read id: UInt64, _ result: Result<[HistoryEntry], SQLiteError>) {
        guard let (name, completion) = reads.removeValue(forKey: id) else { return }
        completion(result.mapError { error in
            let hubError = error.hubError
            return HubError(hubError.code, "subject '\(name)': \(hubError.message)", data: hubError.data)
        })
    }
}

extension SQLiteWriter.Outcome {
    /// The subject the outcome is about (`nil` for a checkpoint's or a probe's).
    var subject: Int64? {
        switch self {
        case let .appended(subject, _), let .failed(subject, _): return subject
        case .checkpointed, .probed: return nil
        }
    }
}
