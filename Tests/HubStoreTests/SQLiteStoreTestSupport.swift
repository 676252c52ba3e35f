import CSQLite
import Foundation
import HubRegistry
import HubSQLite
import HubValue
import HubWire
import NetworkTestSupport
import Testing

/// What the SQLite store's tests share: fresh directories, stores opened as the tests
/// need them, and loops and processes that hold the store back.
protocol SQLiteStoreTesting {}

extension SQLiteStoreTesting {
    func temporaryDirectory() -> String {
        NSTemporaryDirectory() + "hub-sqlite-tests-" + UUID().uuidString
    }

    /// A shared store on `directory`, tried again for up to five seconds while the
    /// directory's lock is held: the store refused just before released it, but a
    /// process that a parallel test spawns at that moment holds a copy of the lock's
    /// descriptor until it executes its program.
    func openSharedOnceUnlocked(_ directory: String, executor: TestLoop) async throws -> SQLiteStore {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        while true {
            let refusal: SQLiteError
            do {
                return try SQLiteStore(directory: directory, executor: executor, shared: true)
            } catch {
                refusal = error
            }
            guard refusal.message.contains("another broker uses this storage directory"), clock.now < deadline else {
                throw refusal
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// What another process (Python's `sqlite3`, told to wait for no lock) prints when it
    /// counts the rows of `database`'s entries: the count, or its error.
    func countOfEntries(fromAnotherProcess database: String) async throws -> String {
        let script = """
            import sqlite3, sys
            try:
                print(sqlite3.connect(sys.argv[1], timeout=0).execute("SELECT count(*) FROM entries").fetchone()[0])
            except sqlite3.Error as error:
                print(error)
            """
        let (process, output) = try DatabaseHolder.python(script, [database])
        let printed = await Blocking.run { output.fileHandleForReading.readDataToEndOfFile() }
        await process.exited()
        return String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A store on a fresh directory (the caller removes it) with the log of subject "s" open.
    func openStore(
        sync: SQLiteStore.Sync = .normal, executor: any StoreExecutor, on loop: TestLoop, commitOnLoop: Bool? = nil,
        loopCommitBudget: Duration, shared: Bool = false
    ) async throws -> (String, Confined<SQLiteStore>, Confined<any SubjectLog>) {
        let directory = temporaryDirectory()
        let store = Confined(try SQLiteStore(
            directory: directory, sync: sync, executor: executor, commitOnLoop: commitOnLoop, loopCommitBudget: loopCommitBudget,
            shared: shared))
        let log = try await loop.run { Confined(try store.value.openLog(subject: "s", retention: HistoryRetention())) }
        return (directory, store, log)
    }

    /// The values of `subject`'s history, read by a store opened again on `directory`.
    func valuesAfterReopening(
        _ directory: String, _ subject: String, sync: SQLiteStore.Sync = .full, on loop: TestLoop
    ) async throws -> [Value] {
        let reopened = Confined(try SQLiteStore(directory: directory, sync: sync, executor: loop))
        let log = try await loop.run { Confined(try reopened.value.openLog(subject: subject, retention: HistoryRetention())) }
        let values = try await log.read(after: 0, on: loop).map(\.value)
        try await loop.run { reopened.value.close() }
        return values
    }

    /// The size of a file, 0 when it is not there.
    func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    /// The page size of the database at `path`.
    func pageSize(_ path: String) -> Int {
        var handle: OpaquePointer?
        guard sqlite3_open(path, &handle) == SQLITE_OK else { return 0 }
        defer { sqlite3_close(handle) }
        var statement: OpaquePointer?
        sqlite3_prepare_v2(handle, "PRAGMA page_size", -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        return sqlite3_step(statement) == SQLITE_ROW ? Int(sqlite3_column_int64(statement, 0)) : 0
    }

    /// A fresh store that checkpoints as `checkpoint`, with one log of up to 1,000 values:
    /// `body` gets the directory, the loop and the log; the store is closed after it.
    func withCheckpointing(
        _ checkpoint: SQLiteStore.Checkpointing, commitOnLoop: Bool? = nil,
        _ body: (String, TestLoop, Confined<any SubjectLog>, Confined<SQLiteStore>) async throws -> Void
    ) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        let store = Confined(try SQLiteStore(
            directory: directory, sync: .normal, executor: loop, checkpoint: checkpoint, commitOnLoop: commitOnLoop))
        let log = try await loop.run { Confined(try store.value.openLog(subject: "bulk", retention: HistoryRetention(size: 1000))) }
        try await body(directory, loop, log, store)
        try await loop.run { store.value.close() }
    }

    /// Runs `sql` on a connection of its own to `path`.
    func execute(_ sql: String, on path: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, SQLiteStore.checksummingVFS) == SQLITE_OK else { throw SQLiteError(code: -1, message: "open \(path)") }
        defer { sqlite3_close(handle) }
        var message: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &message) == SQLITE_OK else {
            defer { sqlite3_free(message) }
            throw SQLiteError(code: -1, message: message.map { String(cString: $0) } ?? "exec")
        }
    }

    /// A database as a broker of schema version 2 left it: `entries` keyed by (subject, offset).
    func makeVersion2Database(in directory: String, entries: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/" + SQLiteStore.fileName
        try execute(
            """
            PRAGMA page_size = 16384;
            PRAGMA journal_mode = WAL;
            CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
            INSERT INTO meta(key, value) VALUES ('schema', '2');
            CREATE TABLE subjects(
                id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, epoch TEXT NOT NULL,
                last_offset INTEGER NOT NULL, last_time INTEGER NOT NULL, last_value BLOB);
            CREATE TABLE entries(
                subject INTEGER NOT NULL, offset INTEGER NOT NULL, time INTEGER NOT NULL, value BLOB NOT NULL,
                PRIMARY KEY(subject, offset)) WITHOUT ROWID;
            INSERT INTO subjects VALUES (1, 'a', 'epoch-a', 0, 0, NULL), (2, 'b', 'epoch-b', 0, 0, NULL);
            \(entries)
            """, on: path)
        return path
    }

    /// A `sync: normal` store on `directory` and its log of `subject`.
    func openNormal(
        _ directory: String, _ subject: String, _ retention: HistoryRetention, clock: ManualClock? = nil,
        on loop: TestLoop
    ) async throws -> (store: Confined<SQLiteStore>, log: Confined<any SubjectLog>) {
        let store = Confined(try SQLiteStore(
            directory: directory, sync: .normal, executor: loop, clock: clock?.clock ?? systemHistoryClock))
        let log = try await loop.run { Confined(try store.value.openLog(subject: subject, retention: retention)) }
        return (store, log)
    }

    /// Appends `values` in one pass of the loop, so that one group commit takes them all,
    /// and returns their offsets.
    func appendInOnePass(
        _ values: [Value], to log: Confined<any SubjectLog>, on loop: TestLoop
    ) async throws -> [UInt64] {
        let results = Confined(ResultBox())
        try await loop.run { for value in values { log.value.append(value) { results.value.add($0) } } }
        let outcomes = await loop.callback { (done: @escaping ([Result<UInt64, HubError>]) -> Void) in
            results.value.whenCount(values.count) { done($0) }
        }
        return try outcomes.map { try $0.get() }
    }

    /// The rows of `entries`, in key order: the offset of each one's last value and how
    /// many it holds.
    func rows(at path: String) throws -> [(last: Int64, count: Int64)] {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, SQLiteStore.checksummingVFS) == SQLITE_OK else { throw SQLiteError(code: -1, message: "open \(path)") }
        defer { sqlite3_close(handle) }
        var statement: OpaquePointer?
        sqlite3_prepare_v2(handle, "SELECT key & ((1 << 44) - 1), count FROM entries ORDER BY key", -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        var rows: [(last: Int64, count: Int64)] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            rows.append((sqlite3_column_int64(statement, 0), sqlite3_column_int64(statement, 1)))
        }
        return rows
    }
}

/// Another connection holding the write lock, as a disk that does not answer would.
final class BlockingWriter {
    private var handle: OpaquePointer?

    init(path: String) throws {
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, SQLiteStore.checksummingVFS) == SQLITE_OK else { throw SQLiteError(code: -1, message: "open \(path)") }
        guard sqlite3_exec(handle, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else {
            throw SQLiteError(code: -1, message: "lock \(path)")
        }
    }

    func release() {
        sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
        sqlite3_close(handle)
        handle = nil
    }
}

/// A Python process that keeps a transaction open on a database (`read`: a snapshot;
/// `write`: the write lock) until it is released.
final class DatabaseHolder: Sendable {
    private let process: ChildProcess
    private let input: Pipe

    init(_ database: String, holding: String) async throws {
        let script = """
            import sqlite3, sys
            connection = sqlite3.connect(sys.argv[1], isolation_level=None)
            connection.execute("BEGIN IMMEDIATE" if sys.argv[2] == "write" else "BEGIN")
            connection.execute("SELECT count(*) FROM subjects").fetchone()
            print("holding", flush=True)
            sys.stdin.read()
            """
        input = Pipe()
        let output: Pipe
        (process, output) = try DatabaseHolder.python(script, [database, holding], input: input)
        let line = await Blocking.run { output.fileHandleForReading.availableData }
        guard String(decoding: line, as: UTF8.self).hasPrefix("holding") else {
            throw SQLiteError(code: -1, message: "the Python holder did not start")
        }
    }

    /// Ends the transaction and the process.
    func release() {
        try? input.fileHandleForWriting.close()
    }


    /// Starts `python3 -c script arguments…`, its standard input from `input` when given;
    /// returns it and the pipe of its standard output.
    static func python(_ script: String, _ arguments: [String], input: Pipe? = nil) throws -> (ChildProcess, Pipe) {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let output = Pipe()
        process.standardOutput = output
        if let input { process.standardInput = input }
        try process.run()
        return (process, output)
    }
}

/// A loop whose deliveries from the store's threads can be held back, while the
/// loop's own work goes on: the moment between a thread's commit and the loop
/// learning of it, made as long as a test needs.
final class HoldingLoop: StoreExecutor, @unchecked Sendable {
    let loop = TestLoop()
    var inEventLoop: Bool { loop.inEventLoop }
    private let lock = NSLock()
    private var holding = false
    private var held: [@Sendable () -> Void] = []

    func execute(_ work: @Sendable @escaping () -> Void) {
        let kept = lock.withLock { () -> Bool in
            if holding { held.append(work) }
            return holding
        }
        if !kept { loop.execute(work) }
    }

    func executeSoon(_ work: @Sendable @escaping () -> Void) {
        loop.execute(work)
    }

    func hold() { lock.withLock { holding = true } }
    var heldCount: Int { lock.withLock { held.count } }

    func release() {
        let works = lock.withLock { () -> [@Sendable () -> Void] in
            holding = false
            defer { held = [] }
            return held
        }
        for work in works { loop.execute(work) }
    }
}

/// A loop whose passes the test ends: the work a store gives itself for the end of
/// the pass or the next one (``StoreExecutor/executeAtEndOfPass(_:)``,
/// ``StoreExecutor/executeSoon(_:)``) waits for ``endPass()``.
final class PassingLoop: StoreExecutor, @unchecked Sendable {
    let loop = TestLoop()
    var inEventLoop: Bool { loop.inEventLoop }
    private let lock = NSLock()
    private var soon: [@Sendable () -> Void] = []

    func execute(_ work: @Sendable @escaping () -> Void) { loop.execute(work) }
    func executeSoon(_ work: @Sendable @escaping () -> Void) { lock.withLock { soon.append(work) } }
    func executeAtEndOfPass(_ work: @Sendable @escaping () -> Void) { executeSoon(work) }
    func answered() { lock.withLock { answers += 1 } }
    /// How often the store said that a pass's work answered clients.
    var answeredCount: Int { lock.withLock { answers } }
    private var answers = 0

    /// Ends the pass: runs the work queued for its end; returns how much it queued in turn.
    func endPass() async throws -> Int {
        let works = lock.withLock { () -> [@Sendable () -> Void] in
            defer { soon = [] }
            return soon
        }
        try await loop.run { for work in works { work() } }
        return lock.withLock { soon.count }
    }
}

/// Results collected on the loop.
final class ResultBox {
    private(set) var results: [Result<UInt64, HubError>] = []
    private var waiter: (count: Int, done: ([Result<UInt64, HubError>]) -> Void)?

    func add(_ result: Result<UInt64, HubError>) {
        results.append(result)
        check()
    }

    /// Calls `done` with the results once there are `count` of them.
    func whenCount(_ count: Int, _ done: @escaping ([Result<UInt64, HubError>]) -> Void) {
        waiter = (count, done)
        check()
    }

    private func check() {
        guard let waiter, results.count >= waiter.count else { return }
        self.waiter = nil
        waiter.done(results)
    }
}
