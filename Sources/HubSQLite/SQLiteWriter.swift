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
/// ``SQLiteSchema``): one value on its own costs one page of the WAL, not two.
///
/// The loop hands operations in with ``submit(_:)`` (a lock and a signal); the thread
/// hands each group's outcomes back with `deliver`, once the group has committed.
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
    }

    /// The outcome of one ``Operation/append(subject:value:)``, in the order they were submitted.
    enum Outcome: Sendable {
        case appended(subject: Int64, offset: UInt64)
        case failed(subject: Int64, SQLiteError)
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

    private let worker = StoreWorkerThread()
    // Guarded by the worker's lock.
    private var queue: [Operation] = []

    // The writer thread's own (handed over before it starts).
    private let connection: SQLiteConnection
    private var subjects: [Int64: SubjectState]
    private let clock: HistoryClock
    /// Told the WAL's size after every commit (the connection's WAL hook points at it).
    private let checkpointer: SQLiteCheckpointer
    private let deliver: @Sendable ([Outcome]) -> Void
    private var statements: Statements?

    private struct Statements {
        let begin: SQLiteStatement
        let commit: SQLiteStatement
        let insertSubject: SQLiteStatement
        let saveLast: SQLiteStatement
        let insertEntry: SQLiteStatement
        let trimThrough: SQLiteStatement
        let firstTime: SQLiteStatement
        let expireFront: SQLiteStatement
        let removeSubject: SQLiteStatement
        let removeEntries: SQLiteStatement
    }

    /// A writer over `connection` (schema ready), knowing `subjects`, whose WAL
    /// `checkpointer` copies into the database; not started.
    init(
        connection: SQLiteConnection, subjects: [Int64: SubjectState], clock: @escaping HistoryClock,
        checkpointer: SQLiteCheckpointer, deliver: @escaping @Sendable ([Outcome]) -> Void
    ) throws(SQLiteError) {
        self.connection = connection
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
            insertEntry: try connection.prepare(SQLiteSchema.insertEntry),
            trimThrough: try connection.prepare(SQLiteSchema.trimThrough),
            firstTime: try connection.prepare(SQLiteSchema.firstTime),
            expireFront: try connection.prepare(SQLiteSchema.expireFront),
            removeSubject: try connection.prepare(SQLiteSchema.removeSubject),
            removeEntries: try connection.prepare(SQLiteSchema.removeEntries))
    }

    /// Starts the thread.
    func start(name: String) {
        worker.start(name: name) { [self] in self.run() }
    }

    /// Queues `operations` (in order) for the next group commit.
    func submit(_ operations: [Operation]) {
        worker.handIn { queue.append(contentsOf: operations) }
    }

    /// Queues one operation.
    func submit(_ operation: Operation) {
        worker.handIn { queue.append(operation) }
    }

    /// Commits what is queued, then stops the thread and waits for it.
    func stop() {
        worker.stop()
    }

    // MARK: The thread

    private func run() {
        while let group = worker.next({ () -> [Operation]? in
            guard !queue.isEmpty else { return nil }
            defer { queue = [] }
            return queue
        }) {
            commit(group)
        }
        statements = nil
    }

    /// Runs `group` as one transaction and reports the appends' outcomes.
    private func commit(_ group: [Operation]) {
        guard let statements else { return }
        let saved = subjects
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(group.count)
        var touched: Set<Int64> = []
        var retained: Set<Int64> = []
        var json: [UInt8] = []
        do throws(SQLiteError) {
            try statements.begin.run()
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
                case let .remove(subject):
                    for statement in [statements.removeEntries, statements.removeSubject] {
                        statement.bind(1, subject)
                        try statement.run()
                    }
                    subjects[subject] = nil
                    touched.remove(subject)
                    retained.remove(subject)
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
                    state.lastTime = max(clock(), state.lastTime)
                    if state.firstTime == nil, state.lastOffset == 1 { state.firstTime = state.lastTime }
                    json.removeAll(keepingCapacity: true)
                    value.writeJSON(into: &json)
                    let insert = statements.insertEntry
                    insert.bind(1, subject)
                    insert.bind(2, Int64(state.lastOffset))
                    insert.bind(3, state.lastTime)
                    insert.bind(4, blob: json)
                    try insert.run()
                    subjects[subject] = state
                    touched.insert(subject)
                    outcomes.append(.appended(subject: subject, offset: state.lastOffset))
                }
            }
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
                }
            }
            if !retry.isEmpty {
                worker.locked { queue.insert(contentsOf: retry, at: 0) }
            }
        }
        if !outcomes.isEmpty { deliver(outcomes) }
    }

    /// Applies the subject's retention: the size bound (which keeps at least the last
    /// value), then the ttl (which may remove every value: the row keeps the last first).
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
                    let save = statements.saveLast
                    save.bind(1, subject)
                    try save.run()
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
}
