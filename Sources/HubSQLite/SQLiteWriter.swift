import CSQLite
import Foundation
import HubEngine
import HubRegistry
import HubValue

/// The store's writer: one thread with its own connection that commits appends in
/// groups. Whatever the loop queued while the previous transaction was committing
/// becomes the next transaction, so one commit (and, with `synchronous=FULL`, one
/// fsync of the WAL) covers every append that waited for it: throughput grows with
/// the number of appends in flight while each one still waits for at most two commits.
///
/// A commit writes the entries it appends and leaves the subjects' rows alone (see
/// ``SQLiteSchema``): one value on its own costs one page of the WAL, not two. The
/// values a group appends to one subject go into one row (a run), up to
/// ``SQLiteSchema/maxValuesPerRow`` values or ``SQLiteSchema/maxRowBytes``.
///
/// The loop hands operations in with ``submit(_:)`` (a lock and a signal); the thread
/// hands each group's outcomes back with `deliver`, once the group has committed.
///
/// With ``commitOnLoop(_:)`` the loop commits a group itself when the thread is idle:
/// a lone publisher's ack then crosses no thread (two hand-offs, each a wake-up of a
/// sleeping thread, cost a lone publisher about half its round trip). Only a store that
/// does not fsync at commits uses it (`synchronous=NORMAL`: a commit writes to the
/// operating system), and it gives way whenever waiting could follow: the database
/// locked by another connection (no busy wait: the group goes to the thread), the WAL
/// at its inline bound (the thread checkpoints), or a commit on the loop that took
/// longer than its budget (2 ms by default: the thread commits for a second).
final class SQLiteWriter: @unchecked Sendable {
    /// One queued change.
    enum Operation: Sendable {
        /// A new subject's row.
        case create(subject: Int64, name: String, epoch: String, retention: HistoryRetention)
        /// The retention of a subject opened again (applied from the next commit on).
        case retain(subject: Int64, retention: HistoryRetention)
        /// One value.
        case append(subject: Int64, value: Value)
        /// A subject's row and history, removed.
        case remove(subject: Int64)
        /// A running pipeline's checkpoint (its JSON), in place of its previous one: in the
        /// transaction of the appends submitted with it.
        case checkpoint(pipeline: String, state: [UInt8])
        /// A small write of its own, to learn whether the disk takes writes again.
        case probe

        /// Whether it appends a value (and so has an outcome).
        var isAppend: Bool {
            if case .append = self { return true }
            return false
        }
    }

    /// The outcome of one ``Operation/append(subject:value:)``,
    /// ``Operation/checkpoint(pipeline:state:)`` or ``Operation/probe``, in the order
    /// they were submitted.
    enum Outcome: Sendable {
        case appended(subject: Int64, offset: UInt64)
        case failed(subject: Int64, SQLiteError)
        /// A checkpoint stored (`nil`), or not (the error).
        case checkpointed(pipeline: String, SQLiteError?)
        /// A probe's commit: `nil` when it succeeded.
        case probed(SQLiteError?)

        /// Whether it is an append's.
        var isAppend: Bool {
            switch self {
            case .checkpointed, .probed: return false
            case .appended, .failed: break
            }
            return true
        }
    }

    /// What the writer knows of a subject (thread-only).
    struct SubjectState {
        var lastOffset: UInt64
        var lastTime: Int64
        var retention: HistoryRetention
        /// The time of the oldest kept value, when known (`nil`: look it up).
        var firstTime: Int64?
        /// The offset the subject's row holds a copy of (behind ``lastOffset`` until an
        /// expiry needs the row to keep the last value).
        var rowOffset: UInt64
    }

    /// A commit on the loop longer than this sends the next second's groups to the thread.
    private let loopCommitBudget: UInt64
    static let loopPauseNanoseconds: UInt64 = 1_000_000_000
    /// The busy timeout of the thread's commits, set by the store when it opens the
    /// connection (the loop's commits wait for nothing, then restore it).
    static let busyTimeoutMilliseconds: Int32 = 30_000

    private let worker = StoreWorkerThread()
    // Guarded by the worker's lock.
    private var queue: [Operation] = []
    /// A group is being committed, by the thread or by the loop: whoever set it owns the
    /// connection, the statements and `subjects` until it clears it.
    private var committing = false

    // The loop's own.
    private var loopPausedUntil: UInt64 = 0

    // The committing side's own (see `committing`; handed over before the thread starts).
    private let connection: SQLiteConnection
    private var subjects: [Int64: SubjectState]
    private let clock: HistoryClock
    /// Told the WAL's size after every commit (the connection's WAL hook points at it).
    private let checkpointer: SQLiteCheckpointer
    private let deliver: @Sendable ([Outcome]) -> Void
    private var statements: Statements?
    /// A row's JSON buffer kept from one commit to the next, so that a row does not grow
    /// its array from nothing, reallocating as it goes, every time.
    private var rowBuffer: [UInt8] = []

    private struct Statements {
        let begin: SQLiteStatement
        let commit: SQLiteStatement
        let insertSubject: SQLiteStatement
        let saveLast: SQLiteStatement
        let lastEntry: SQLiteStatement
        let insertEntry: SQLiteStatement
        let trimThrough: SQLiteStatement
        let firstTime: SQLiteStatement
        let expireFront: SQLiteStatement
        let removeSubject: SQLiteStatement
        let removeEntries: SQLiteStatement
        let saveCheckpoint: SQLiteStatement
        let probe: SQLiteStatement
        let upsertTableRow: SQLiteStatement
        let deleteTableRow: SQLiteStatement
        let removeTableRows: SQLiteStatement
    }

    /// A writer over `connection` (schema ready), knowing `subjects`, whose WAL
    /// `checkpointer` copies into the database; not started.
    init(
        connection: SQLiteConnection, subjects: [Int64: SubjectState], clock: @escaping HistoryClock,
        checkpointer: SQLiteCheckpointer, loopCommitBudget: Duration = .milliseconds(2),
        deliver: @escaping @Sendable ([Outcome]) -> Void
    ) throws(SQLiteError) {
        self.connection = connection
        self.loopCommitBudget = UInt64(clamping: loopCommitBudget.nanosecondsClamped)
        self.checkpointer = checkpointer
        checkpointer.watch(connection)
        self.subjects = subjects
        self.clock = clock
        self.deliver = deliver
        statements = Statements(
            begin: try connection.prepare("BEGIN IMMEDIATE"),
            commit: try connection.prepare("COMMIT"),
            insertSubject: try connection.prepare(SQLiteSchema.insertSubject),
            saveLast: try connection.prepare(SQLiteSchema.saveLast),
            lastEntry: try connection.prepare(SQLiteSchema.lastEntry),
            insertEntry: try connection.prepare(SQLiteSchema.insertEntry),
            trimThrough: try connection.prepare(SQLiteSchema.trimThrough),
            firstTime: try connection.prepare(SQLiteSchema.firstTime),
            expireFront: try connection.prepare(SQLiteSchema.expireFront),
            removeSubject: try connection.prepare(SQLiteSchema.removeSubject),
            removeEntries: try connection.prepare(SQLiteSchema.removeEntries),
            saveCheckpoint: try connection.prepare(SQLiteSchema.saveCheckpoint),
            probe: try connection.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('probe', ?1)"),
            upsertTableRow: try connection.prepare(SQLiteSchema.upsertTableRow),
            deleteTableRow: try connection.prepare(SQLiteSchema.deleteTableRow),
            removeTableRows: try connection.prepare(SQLiteSchema.removeTableRows))
    }

    /// Starts the thread.
    func start(name: String) {
        worker.start(name: name) { [self] in self.run() }
    }

    /// Queues `operations` (in order) for the next group commit.
    func submit(_ operations: [Operation]) {
        worker.handIn { queue.append(contentsOf: operations) }
    }

    /// Commits what is queued, stops the thread, waits for it and closes the connection.
    func stop() {
        worker.stop()
        connection.close()
    }

    // MARK: The thread

    /// On the loop: commits `group` right away when the thread is idle and nothing is
    /// queued for it, and returns the appends' outcomes; `nil` when it did not (the thread
    /// busy, the database locked, the WAL at its bound, the loop's budget spent): the
    /// caller then queues the group for the thread.
    func commitOnLoop(_ group: [Operation]) -> [Outcome]? {
        let start = DispatchTime.now().uptimeNanoseconds
        guard start >= loopPausedUntil, !checkpointer.isAtInlineBound,
            worker.locked({ () -> Bool in
                guard queue.isEmpty, !committing else { return false }
                committing = true
                return true
            })
        else { return nil }
        connection.setBusyTimeout(milliseconds: 0)
        checkpointer.committingOnLoop = true
        let outcomes = commit(group, waitForLock: false)
        checkpointer.committingOnLoop = false
        connection.setBusyTimeout(milliseconds: SQLiteWriter.busyTimeoutMilliseconds)
        let end = DispatchTime.now().uptimeNanoseconds
        if end &- start > loopCommitBudget { loopPausedUntil = end + SQLiteWriter.loopPauseNanoseconds }
        // A failed group may have queued its subjects' rows again for the thread.
        let waiting = worker.locked { () -> Bool in
            committing = false
            return !queue.isEmpty
        }
        if waiting { worker.handIn {} }
        return outcomes
    }

    private func run() {
        while let group = worker.next({ () -> [Operation]? in
            guard !queue.isEmpty, !committing else { return nil }
            committing = true
            defer { queue = [] }
            return queue
        }) {
            if let outcomes = commit(group, waitForLock: true), !outcomes.isEmpty { deliver(outcomes) }
            worker.locked { committing = false }
        }
        statements = nil
    }

    /// The values of one subject that one commit gathers into one row, as JSON: `[` and
    /// the values, separated by commas.
    private struct Run {
        var lastOffset: UInt64 = 0
        var time: Int64 = 0
        var count = 0
        var json: [UInt8]
    }

    /// A new run, on the kept buffer when there is one.
    private func newRun() -> Run {
        var json = rowBuffer
        rowBuffer = []
        json.removeAll(keepingCapacity: true)
        json.append(UInt8(ascii: "["))
        return Run(json: json)
    }

    /// Runs `group` as one transaction and returns the appends' outcomes; `nil` when
    /// `waitForLock` is false and another connection holds the database's write lock
    /// (nothing was done).
    private func commit(_ group: [Operation], waitForLock: Bool) -> [Outcome]? {
        guard let statements else { return [] }
        let saved = subjects
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(group.count)
        var touched: Set<Int64> = []
        var retained: Set<Int64> = []
        var runs: [Int64: Run] = [:]
        // The values of a commit share its time.
        let time = clock()
        do throws(SQLiteError) {
            do throws(SQLiteError) {
                try statements.begin.run()
            } catch let error where !waitForLock && error.code & 0xFF == SQLITE_BUSY {
                return nil
            }
            for operation in group {
                switch operation {
                case let .create(subject, name, epoch, retention):
                    let insert = statements.insertSubject
                    insert.bind(1, subject)
                    insert.bind(2, name)
                    insert.bind(3, epoch)
                    try insert.run()
                    subjects[subject] = SubjectState(
                        lastOffset: 0, lastTime: 0, retention: retention, firstTime: nil, rowOffset: 0)
                case let .retain(subject, retention):
                    subjects[subject]?.retention = retention
                    retained.insert(subject)
                case .probe:
                    statements.probe.bind(1, String(time))
                    try statements.probe.run()
                    outcomes.append(.probed(nil))
                case let .remove(subject):
                    runs[subject] = nil
                    for statement in [statements.removeEntries, statements.removeTableRows, statements.removeSubject] {
                        statement.bind(1, subject)
                        try statement.run()
                    }
                    subjects[subject] = nil
                    touched.remove(subject)
                    retained.remove(subject)
                case let .checkpoint(pipeline, state):
                    let save = statements.saveCheckpoint
                    save.bind(1, pipeline)
                    save.bind(2, blob: state)
                    save.bind(3, time)
                    try save.run()
                    outcomes.append(.checkpointed(pipeline: pipeline, nil))
                case let .append(subject, value):
                    guard var state = subjects[subject] else {
                        outcomes.append(.failed(subject: subject, SQLiteError(code: -1, message: "the subject's history was removed")))
                        continue
                    }
                    guard state.lastOffset < SQLiteSchema.maxOffset else {
                        outcomes.append(.failed(subject: subject, SQLiteError(
                            code: -1, message: "the subject's history reached offset \(SQLiteSchema.maxOffset), the store's largest")))
                        continue
                    }
                    state.lastOffset += 1
                    state.lastTime = max(time, state.lastTime)
                    if state.firstTime == nil, state.lastOffset == 1 { state.firstTime = state.lastTime }
                    var run = runs.removeValue(forKey: subject) ?? newRun()
                    if run.count > 0 { run.json.append(UInt8(ascii: ",")) }
                    value.writeJSON(into: &run.json)
                    run.count += 1
                    run.lastOffset = state.lastOffset
                    run.time = state.lastTime
                    if run.count >= SQLiteSchema.maxValuesPerRow || run.json.count >= SQLiteSchema.maxRowBytes {
                        try insert(&run, of: subject, statements)
                    } else {
                        runs[subject] = run
                    }
                    if state.retention.keepsLatestPerKey {
                        try keep(value, at: state.lastOffset, of: subject, statements)
                    }
                    subjects[subject] = state
                    touched.insert(subject)
                    outcomes.append(.appended(subject: subject, offset: state.lastOffset))
                }
            }
            // Taken out of the dictionary, so that closing a row's array copies nothing.
            while var entry = runs.popFirst() { try insert(&entry.value, of: entry.key, statements) }
            for subject in retained.union(touched) { try trim(subject, statements) }
            try statements.commit.run()
        } catch {
            try? connection.execute("ROLLBACK")
            subjects = saved
            // Values that failed are reported; a new subject's row and a retention are kept
            // for the next group, so that later appends still find them.
            var retry: [Operation] = []
            outcomes = []
            for operation in group {
                switch operation {
                case .create, .retain, .remove: retry.append(operation)
                case let .append(subject, _): outcomes.append(.failed(subject: subject, error))
                // Not tried again: the pipeline restarts from the checkpoint stored before.
                case let .checkpoint(pipeline, _): outcomes.append(.checkpointed(pipeline: pipeline, error))
                case .probe: outcomes.append(.probed(error))
                }
            }
            if !retry.isEmpty {
                worker.locked { queue.insert(contentsOf: retry, at: 0) }
            }
        }
        return outcomes
    }

    /// Inserts `run`'s row: the value alone when it holds one, else the array of them
    /// (closed in place); then keeps its buffer for the next run, unless it grew past
    /// twice a full row's size (one large value).
    private func insert(_ run: inout Run, of subject: Int64, _ statements: Statements) throws(SQLiteError) {
        let insert = statements.insertEntry
        insert.bind(1, subject)
        insert.bind(2, Int64(run.lastOffset))
        insert.bind(3, run.time)
        if run.count == 1 {
            insert.bind(4, blob: run.json[1...])
        } else {
            run.json.append(UInt8(ascii: "]"))
            insert.bind(4, blob: run.json[...])
        }
        insert.bind(5, Int64(run.count))
        try insert.run()
        if run.json.capacity <= 2 * SQLiteSchema.maxRowBytes, run.json.capacity > rowBuffer.capacity {
            rowBuffer = run.json
            run.json = []
        }
    }

    /// Applies the subject's retention: the size bound (which keeps at least the last
    /// value), then the ttl (which may remove every value: the row keeps the last first).
    /// A table subject's change, kept as its key's row (or its key's row removed, for `null`).
    private func keep(_ value: Value, at offset: UInt64, of subject: Int64, _ statements: Statements) throws(SQLiteError) {
        guard let key = TableChange.key(of: value) else { return }
        if value["value"]?.isNull == false {
            let upsert = statements.upsertTableRow
            upsert.bind(1, subject)
            upsert.bind(2, key)
            upsert.bind(3, Int64(offset))
            var json: [UInt8] = []
            value.writeJSON(into: &json)
            upsert.bind(4, blob: json[...])
            try upsert.run()
        } else {
            let delete = statements.deleteTableRow
            delete.bind(1, subject)
            delete.bind(2, key)
            try delete.run()
        }
    }

    private func trim(_ subject: Int64, _ statements: Statements) throws(SQLiteError) {
        guard var state = subjects[subject] else { return }
        let size = UInt64(state.retention.size)
        if state.lastOffset > size {
            let trim = statements.trimThrough
            trim.bind(1, subject)
            trim.bind(2, Int64(state.lastOffset - size))
            try trim.run()
            state.firstTime = nil
        }
        if let ttl = state.retention.ttl {
            let cutoff = clock() - ttl.nanosecondsClamped
            if state.firstTime == nil {
                let first = statements.firstTime
                first.bind(1, subject)
                defer { first.reset() }
                state.firstTime = try first.step() ? first.int64(0) : nil
            }
            if let firstTime = state.firstTime, firstTime < cutoff {
                if state.rowOffset < state.lastOffset {
                    try saveLast(subject, statements)
                    state.rowOffset = state.lastOffset
                }
                let expire = statements.expireFront
                expire.bind(1, subject)
                expire.bind(2, cutoff)
                try expire.run()
                state.firstTime = nil
            }
        }
        subjects[subject] = state
    }

    /// Copies the subject's last value, offset and time into its row.
    private func saveLast(_ subject: Int64, _ statements: Statements) throws(SQLiteError) {
        let last = statements.lastEntry
        last.bind(1, subject)
        defer { last.reset() }
        guard try last.step() else { return }
        let offset = UInt64(max(0, last.int64(0)))
        let values = try last.withBlob(2) { raw throws(SQLiteError) in
            try SQLiteSchema.values(ofRow: raw, count: max(1, last.int64(3)), offset: offset)
        }
        var json: [UInt8] = []
        values.last?.writeJSON(into: &json)
        let save = statements.saveLast
        save.bind(1, subject)
        save.bind(2, Int64(offset))
        save.bind(3, last.int64(1))
        save.bind(4, blob: json[...])
        try save.run()
    }
}
