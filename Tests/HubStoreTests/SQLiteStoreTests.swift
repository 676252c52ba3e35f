import CSQLite
import Foundation
import HubRegistry
import HubSQLite
import HubValue
import HubWire
import NetworkTestSupport
import Testing

/// What the SQLite store adds to the conformance suite: it owns its directory, never
/// blocks the loop on the disk, bounds what waits for the disk, and refuses files it
/// cannot read.
@Suite("SQLite store")
struct SQLiteStoreTests {
    private func temporaryDirectory() -> String {
        NSTemporaryDirectory() + "hub-sqlite-tests-" + UUID().uuidString
    }

    /// Another connection holding the write lock, as a disk that does not answer would.
    private final class BlockingWriter {
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

    @Test("a second store on the same directory is refused while the first is open")
    func oneBrokerPerDirectory() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        let first = try SQLiteStore(directory: directory, executor: loop)
        #expect {
            _ = try SQLiteStore(directory: directory, executor: loop)
        } throws: { error in
            "\(error)".contains("another broker uses this storage directory")
        }
        let store = Confined(first)
        try await loop.run { store.value.close() }
        let again = Confined(try SQLiteStore(directory: directory, executor: loop))
        try await loop.run { again.value.close() }
    }

    @Test(
        "the open store keeps other processes out of its database (locked once), unless shared; they read it once it closed",
        arguments: [false, true])
    func otherProcesses(shared: Bool) async throws {
        let loop = TestLoop()
        let (directory, store, log) = try await openStore(
            executor: loop, on: loop, loopCommitBudget: .seconds(60), shared: shared)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for index in 1...3 {
            #expect(try await log.append(.int(Int64(index)), on: loop).get() == UInt64(index))
        }
        let database = directory + "/" + SQLiteStore.fileName
        let whileOpen = try await countOfEntries(fromAnotherProcess: database)
        if shared {
            #expect(whileOpen == "3")
        } else {
            #expect(whileOpen.contains("database is locked"), "\(whileOpen)")
        }
        #expect(try await log.append(4, on: loop).get() == 4)
        try await loop.run { store.value.close() }
        #expect(try await countOfEntries(fromAnotherProcess: database) == "4")
    }

    @Test(
        "a database another process holds is refused at once, naming the path and what to do",
        arguments: [(false, "read"), (true, "write")])
    func lockedByAnotherProcess(shared: Bool, holding: String) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        let created = Confined(try SQLiteStore(directory: directory, executor: loop))
        try await loop.run { created.value.close() }
        let database = directory + "/" + SQLiteStore.fileName
        let holder = try await DatabaseHolder(database, holding: holding)
        defer { holder.release() }
        #expect {
            _ = try SQLiteStore(directory: directory, executor: loop, shared: shared)
        } throws: { error in
            let text = "\(error)"
            return text.contains("cannot open \(database)")
                && text.contains(shared ? "another process is writing" : "storage.shared: true lets other processes in")
        }
        if !shared {
            // A reader elsewhere does not keep a shared store out.
            let store = Confined(try await openSharedOnceUnlocked(directory, executor: loop))
            try await loop.run { store.value.close() }
        }
    }

    /// A shared store on `directory`, tried again for up to five seconds while the
    /// directory's lock is held: the store refused just before released it, but a
    /// process that a parallel test spawns at that moment holds a copy of the lock's
    /// descriptor until it executes its program.
    private func openSharedOnceUnlocked(_ directory: String, executor: TestLoop) async throws -> SQLiteStore {
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

    /// A Python process that keeps a transaction open on a database (`read`: a snapshot;
    /// `write`: the write lock) until it is released.
    private final class DatabaseHolder: Sendable {
        private let process: Process
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
            (process, output) = try SQLiteStoreTests.python(script, [database, holding], input: input)
            let line = await Blocking.run { output.fileHandleForReading.availableData }
            guard String(decoding: line, as: UTF8.self).hasPrefix("holding") else {
                throw SQLiteError(code: -1, message: "the Python holder did not start")
            }
        }

        /// Ends the transaction and the process.
        func release() {
            try? input.fileHandleForWriting.close()
        }
    }

    /// Starts `python3 -c script arguments…`, its standard input from `input` when given;
    /// returns it and the pipe of its standard output.
    private static func python(_ script: String, _ arguments: [String], input: Pipe? = nil) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let output = Pipe()
        process.standardOutput = output
        if let input { process.standardInput = input }
        try process.run()
        return (process, output)
    }

    /// What another process (Python's `sqlite3`, told to wait for no lock) prints when it
    /// counts the rows of `database`'s entries: the count, or its error.
    private func countOfEntries(fromAnotherProcess database: String) async throws -> String {
        let script = """
            import sqlite3, sys
            try:
                print(sqlite3.connect(sys.argv[1], timeout=0).execute("SELECT count(*) FROM entries").fetchone()[0])
            except sqlite3.Error as error:
                print(error)
            """
        let (process, output) = try SQLiteStoreTests.python(script, [database])
        let printed = await Blocking.run { output.fileHandleForReading.readDataToEndOfFile() }
        await process.exited()
        return String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(
        "a stuck disk delays appends, not the loop; readers go on; the appends complete in order once it answers",
        arguments: SQLiteStore.Sync.allCases)
    func stuckDisk(sync: SQLiteStore.Sync) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        // With `normal` the loop would commit itself: it finds the lock taken and gives
        // the group to the thread instead of waiting.
        let store = Confined(try SQLiteStore(directory: directory, sync: sync, executor: loop))
        let log = try await loop.run { Confined(try store.value.openLog(subject: "slow", retention: HistoryRetention())) }
        #expect(try await log.append("before", on: loop).get() == 1)

        let blocker = try BlockingWriter(path: directory + "/" + SQLiteStore.fileName)
        let results = Confined(ResultBox())
        // A lone value first (the loop's to commit, with `normal`), then two together.
        try await loop.run { log.value.append(1) { results.value.add($0) } }
        try await loop.run {
            for index in 2...3 {
                log.value.append(.int(Int64(index))) { results.value.add($0) }
            }
        }
        // The loop answers while the appends wait for the disk, and the reader serves pages.
        #expect(try await loop.run { results.value.results.count } == 0)
        #expect(try await log.read(after: 0, on: loop).map(\.value) == ["before"])
        #expect(try await loop.run { results.value.results.count } == 0)

        blocker.release()
        let offsets = await loop.callback { (done: @escaping ([UInt64]) -> Void) in
            results.value.whenCount(3) { done($0.compactMap { try? $0.get() }) }
        }
        #expect(offsets == [2, 3, 4])
        try await loop.run { store.value.close() }
    }

    @Test(
        "with sync normal the loop commits a lone value itself; several in one pass, or with full (an fsync), or when told not to, the thread does",
        arguments: [(SQLiteStore.Sync.normal, nil, true), (.normal, false, false), (.full, nil, false), (.full, true, false)])
    func commitsOnTheLoop(sync: SQLiteStore.Sync, commitOnLoop: Bool?, onLoop: Bool) async throws {
        let loop = TestLoop()
        // A budget no commit reaches on a busy machine: which side commits depends on the
        // policy alone (the budget has a test of its own).
        let (directory, store, log) = try await openStore(
            sync: sync, executor: loop, on: loop, commitOnLoop: commitOnLoop, loopCommitBudget: .seconds(60))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try await log.append("first", on: loop).get() == 1)
        let before = try await loop.run { store.value.loopCommits }
        for index in 2...4 {
            #expect(try await log.append(.int(Int64(index)), on: loop).get() == UInt64(index))
        }
        #expect(try await loop.run { store.value.loopCommits } - before == (onLoop ? 3 : 0), "one commit on the loop per lone value")

        // Five values appended in one pass are one group, the thread's.
        let results = Confined(ResultBox())
        let offsets = await loop.callback { (done: @escaping ([UInt64]) -> Void) in
            for index in 5...9 { log.value.append(.int(Int64(index))) { results.value.add($0) } }
            results.value.whenCount(5) { done($0.compactMap { try? $0.get() }) }
        }
        #expect(offsets == [5, 6, 7, 8, 9])
        #expect(try await loop.run { store.value.loopCommits } - before == (onLoop ? 3 : 0))
        try await loop.run { store.value.close() }

        #expect(try await valuesAfterReopening(directory, "s", sync: sync, on: loop) == ["first", 2, 3, 4, 5, 6, 7, 8, 9])
    }

    /// A loop whose deliveries from the store's threads can be held back, while the
    /// loop's own work goes on: the moment between a thread's commit and the loop
    /// learning of it, made as long as a test needs.
    private final class HoldingLoop: StoreExecutor, @unchecked Sendable {
        let loop = TestLoop()
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

    @Test("the loop commits nothing itself while the thread's outcomes are on their way: every append completes with its own offset")
    func loopWaitsForTheThreadsOutcomes() async throws {
        let executor = HoldingLoop()
        let loop = executor.loop
        let (directory, store, log) = try await openStore(executor: executor, on: loop, loopCommitBudget: .seconds(60))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try await log.append("first", on: loop).get() == 1)

        executor.hold()
        let results = Confined(ResultBox())
        // Two values in one pass: the thread commits them; their outcomes are held back.
        try await loop.run {
            for index in 2...3 { log.value.append(.int(Int64(index))) { results.value.add($0) } }
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while executor.heldCount == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(executor.heldCount == 1)
        // Room for the thread to finish (it hands the outcomes over, then goes idle).
        try await Task.sleep(for: .milliseconds(50))
        // A lone value: the thread is idle, but the loop has not had its outcomes yet.
        try await loop.run { log.value.append(4) { results.value.add($0) } }
        try await Task.sleep(for: .milliseconds(50))
        executor.release()
        let offsets = await loop.callback { (done: @escaping ([UInt64]) -> Void) in
            results.value.whenCount(3) { done($0.compactMap { try? $0.get() }) }
        }
        #expect(offsets == [2, 3, 4])
        try await loop.run { store.value.close() }
        #expect(try await valuesAfterReopening(directory, "s", on: loop) == ["first", 2, 3, 4])
    }

    @Test("a commit on the loop over its budget leaves the next second's commits to the thread")
    func loopCommitBudget() async throws {
        let loop = TestLoop()
        let start = ContinuousClock.now
        // Every commit takes longer than a nanosecond: after each commit on the loop, the
        // thread commits for a second.
        let (directory, store, log) = try await openStore(executor: loop, on: loop, loopCommitBudget: .nanoseconds(1))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for index in 1...20 {
            #expect(try await log.append(.int(Int64(index)), on: loop).get() == UInt64(index))
        }
        let commits = try await loop.run { store.value.loopCommits }
        let seconds = Int((ContinuousClock.now - start) / .seconds(1))
        // 21 groups (the subject's row, then 20 lone values): at most one on the loop per
        // second. Without the budget every one of them was.
        #expect(commits >= 1)
        #expect(commits <= seconds + 1, "\(commits) commits on the loop in \(seconds) s")
        try await loop.run { store.value.close() }
        #expect(try await valuesAfterReopening(directory, "s", on: loop) == (1...20).map { Value.int(Int64($0)) })
    }

    /// A store on a fresh directory (the caller removes it) with the log of subject "s" open.
    private func openStore(
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
    private func valuesAfterReopening(
        _ directory: String, _ subject: String, sync: SQLiteStore.Sync = .full, on loop: TestLoop
    ) async throws -> [Value] {
        let reopened = Confined(try SQLiteStore(directory: directory, sync: sync, executor: loop))
        let log = try await loop.run { Confined(try reopened.value.openLog(subject: subject, retention: HistoryRetention())) }
        let values = try await log.read(after: 0, on: loop).map(\.value)
        try await loop.run { reopened.value.close() }
        return values
    }

    @Test("values waiting for the disk are bounded in bytes: beyond it appends are limit_exceeded")
    func pendingBound() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        let text = Value.string(String(repeating: "y", count: 998))
        // Room for ten of them and half of another: the eleventh is over the bound,
        // whatever size the store's estimate gives a value.
        let bound = 10 * text.estimatedBytes + text.estimatedBytes / 2
        let store = Confined(try SQLiteStore(directory: directory, executor: loop, maxPendingBytes: bound))
        let log = try await loop.run { Confined(try store.value.openLog(subject: "flood", retention: HistoryRetention())) }
        _ = try await log.append("warm", on: loop).get()
        let blocker = try BlockingWriter(path: directory + "/" + SQLiteStore.fileName)
        let results = Confined(ResultBox())
        try await loop.run {
            for _ in 1...15 { log.value.append(text) { results.value.add($0) } }
        }
        // Everything over the bound was refused at once; nothing else has completed.
        let refused = try await loop.run { results.value.results.map { result -> HubError.Code? in
            if case let .failure(error) = result { return error.code }
            return nil
        } }
        #expect(refused.count == 5)
        #expect(refused.allSatisfy { $0 == .limitExceeded })
        blocker.release()
        let offsets = await loop.callback { (done: @escaping ([UInt64]) -> Void) in
            results.value.whenCount(15) { done($0.compactMap { try? $0.get() }) }
        }
        #expect(offsets == Array(2...11))
        #expect(try await log.append("later", on: loop).get() == 12)
        try await loop.run { store.value.close() }
    }

    @Test("a file that is not a hub database is refused with a clear error")
    func notADatabase() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: directory + "/" + SQLiteStore.fileName))
        #expect {
            _ = try SQLiteStore(directory: directory, executor: TestLoop())
        } throws: { error in
            "\(error)".contains("not a database")
        }
    }

    @Test("a directory that cannot be created is refused with its path")
    func badDirectory() throws {
        let file = temporaryDirectory()
        _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect {
            _ = try SQLiteStore(directory: file + "/sub", executor: TestLoop())
        } throws: { error in
            "\(error)".contains(file)
        }
    }

    @Test("a restart after every value expired keeps the last offset and value: the row is saved before an expiry")
    func expiredThenRestarted() async throws {
        let fixture = try await StoreFixture(kind: .sqlite)
        do {
            let retention = HistoryRetention(size: 100, ttl: .seconds(10))
            let log = try await fixture.open("brief", retention)
            _ = try await log.append("a", on: fixture.loop).get()
            _ = try await log.append("b", on: fixture.loop).get()
            fixture.clock.advance(by: .seconds(30))
            // Opening it again commits its retention, which expires both values; another
            // subject's append, committed after it, says when that is done.
            _ = try await fixture.open("brief", retention)
            let other = try await fixture.open("other")
            _ = try await other.append(1, on: fixture.loop).get()
            try await fixture.restart()
            let reopened = try await fixture.open("brief", retention)
            #expect(try await reopened.read(after: 0, on: fixture.loop).isEmpty)
            let position = try await reopened.position(on: fixture.loop)
            #expect(position.lastOffset == 2)
            #expect(position.lastValue == "b")
            #expect(try await reopened.append("c", on: fixture.loop).get() == 3)
        } catch {
            await fixture.tearDown()
            throw error
        }
        await fixture.tearDown()
    }

    /// The size of a file, 0 when it is not there.
    private func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    /// The page size of the database at `path`.
    private func pageSize(_ path: String) -> Int {
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
    private func withCheckpointing(
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

    @Test("a checkpoint is due after so many new pages, not after every commit once the WAL is that large")
    func checkpointsFollowNewPages() async throws {
        try await withCheckpointing(SQLiteStore.Checkpointing(backgroundPages: 8, inlinePages: .max)) { directory, loop, log, store in
            let database = directory + "/" + SQLiteStore.fileName
            _ = try await log.append(.string("first"), on: loop).get()
            // A reader that keeps its snapshot: no checkpoint can copy what came after it,
            // so the WAL never starts over, as under a steady stream of commits.
            var reader: OpaquePointer?
            guard sqlite3_open(database, &reader) == SQLITE_OK else { throw SQLiteError(code: -1, message: "open \(database)") }
            defer { sqlite3_close(reader) }
            guard sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM sqlite_master;", nil, nil, nil) == SQLITE_OK else {
                throw SQLiteError(code: -1, message: "read \(database)")
            }
            let text = Value.string(String(repeating: "c", count: 8000))
            for _ in 1...100 { _ = try await log.append(text, on: loop).get() }
            sqlite3_exec(reader, "COMMIT", nil, nil, nil)
            let pages = fileSize(database + "-wal") / (pageSize(database) + 24)
            // The background thread may still be on its first checkpoint on a busy machine.
            let deadline = ContinuousClock.now + .seconds(20)
            while store.value.checkpoints == 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let checkpoints = store.value.checkpoints
            // Every commit added a page or two; a checkpoint follows each 8 of them (the
            // first one comes sooner: the WAL began with the schema).
            #expect(pages >= 100)
            #expect(checkpoints >= 1)
            #expect(checkpoints <= pages / 8 + 3, "\(checkpoints) checkpoints for \(pages) pages")
        }
    }

    @Test("the WAL is checkpointed in the background: the database fills while the writer goes on")
    func backgroundCheckpoints() async throws {
        // Only the background thread checkpoints (the inline bound is out of reach).
        try await withCheckpointing(SQLiteStore.Checkpointing(backgroundPages: 4, inlinePages: .max)) { directory, loop, log, _ in
            let database = directory + "/" + SQLiteStore.fileName
            let before = fileSize(database)
            let text = Value.string(String(repeating: "z", count: 8000))
            for _ in 1...200 { _ = try await log.append(text, on: loop).get() }
            // 1.6 MB of values reach the database file only through a checkpoint.
            let deadline = ContinuousClock.now + .seconds(20)
            while fileSize(database) < before + 1_000_000, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(fileSize(database) >= before + 1_000_000, "the database holds the values before the store closes")
            #expect(try await log.read(after: 195, on: loop).count == 5)
        }
    }

    @Test(
        "a checkpointer that falls behind leaves it to the writer: the WAL stays bounded (the loop gives way to the thread)",
        arguments: [true, false])
    func inlineCheckpointsBoundTheWAL(commitOnLoop: Bool) async throws {
        // The background never starts; the writer checkpoints from 16 pages of WAL on.
        try await withCheckpointing(
            SQLiteStore.Checkpointing(backgroundPages: .max, inlinePages: 16), commitOnLoop: commitOnLoop
        ) { directory, loop, log, store in
            let wal = directory + "/" + SQLiteStore.fileName + "-wal"
            let text = Value.string(String(repeating: "w", count: 8000))
            var largest = 0
            for _ in 1...300 {
                _ = try await log.append(text, on: loop).get()
                largest = max(largest, fileSize(wal))
            }
            // 2.4 MB were written; the WAL never held much more than 16 pages (a commit of
            // one value, in a leaf and two overflow pages, goes a few pages beyond the
            // bound, and on the loop the commit after it is the thread's).
            let frame = pageSize(directory + "/" + SQLiteStore.fileName) + 24
            #expect(largest > 0)
            #expect(largest < 28 * frame + 32, "the WAL grew to \(largest / frame) pages")
            #expect(store.value.checkpoints > 0)
            // Only the thread checkpoints: on the loop, commits stop at the bound.
            #expect(try await loop.run { store.value.loopCommits > 0 } == commitOnLoop)
        }
    }

    @Test("a database of an older schema version is read and marked the current one; an unknown version is refused")
    func schemaVersions() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/" + SQLiteStore.fileName
        let loop = TestLoop()
        func setVersion(_ version: String) throws {
            var handle: OpaquePointer?
            guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, SQLiteStore.checksummingVFS) == SQLITE_OK else { throw SQLiteError(code: -1, message: "open \(path)") }
            defer { sqlite3_close(handle) }
            guard sqlite3_exec(handle, "UPDATE meta SET value = '\(version)' WHERE key = 'schema'", nil, nil, nil) == SQLITE_OK else {
                throw SQLiteError(code: -1, message: "update \(path)")
            }
        }
        func version() throws -> String? {
            var handle: OpaquePointer?
            guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, SQLiteStore.checksummingVFS) == SQLITE_OK else { throw SQLiteError(code: -1, message: "open \(path)") }
            defer { sqlite3_close(handle) }
            var statement: OpaquePointer?
            sqlite3_prepare_v2(handle, "SELECT value FROM meta WHERE key = 'schema'", -1, &statement, nil)
            defer { sqlite3_finalize(statement) }
            guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return nil }
            return String(cString: text)
        }
        let first = Confined(try SQLiteStore(directory: directory, executor: loop))
        let log = try await loop.run { Confined(try first.value.openLog(subject: "s", retention: HistoryRetention())) }
        _ = try await log.append("kept", on: loop).get()
        try await loop.run { first.value.close() }
        #expect(try version() == "4")

        try setVersion("2")
        let second = Confined(try SQLiteStore(directory: directory, executor: loop))
        let again = try await loop.run { Confined(try second.value.openLog(subject: "s", retention: HistoryRetention())) }
        #expect(try await again.position(on: loop).lastValue == "kept")
        try await loop.run { second.value.close() }
        #expect(try version() == "4")

        try setVersion("9")
        #expect {
            _ = try SQLiteStore(directory: directory, executor: loop)
        } throws: { error in
            "\(error)".contains("schema version 9") && "\(error)".contains("reads versions 1, 2, 3 and 4")
        }
    }

    /// Runs `sql` on a connection of its own to `path`.
    private func execute(_ sql: String, on path: String) throws {
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
    private func makeVersion2Database(in directory: String, entries: String) throws -> String {
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

    @Test("a version 2 database's history is moved to version 3's keys when opened: every value, offset and epoch kept")
    func migratesVersion2() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try makeVersion2Database(in: directory, entries: """
            INSERT INTO entries VALUES (1, 1, 10, '"a1"'), (1, 2, 11, '"a2"'), (1, 3, 12, '"a3"'),
                (2, 5, 10, '"b5"'), (2, 6, 11, '"b6"');
            """)
        let loop = TestLoop()
        let store = Confined(try SQLiteStore(directory: directory, executor: loop))
        let a = try await loop.run { Confined(try store.value.openLog(subject: "a", retention: HistoryRetention())) }
        let b = try await loop.run { Confined(try store.value.openLog(subject: "b", retention: HistoryRetention())) }
        #expect(try await a.read(after: 0, on: loop).map(\.offset) == [1, 2, 3])
        #expect(try await a.read(after: 1, on: loop).map(\.value) == ["a2", "a3"])
        #expect(try await b.read(after: 0, on: loop).map(\.value) == ["b5", "b6"])
        #expect(try await a.position(on: loop).epoch == "epoch-a")
        #expect(try await b.position(on: loop).lastOffset == 6)
        #expect(try await b.append("b7", on: loop).get() == 7)
        #expect(try await a.append("a4", on: loop).get() == 4)
        #expect(try await b.read(after: 5, on: loop).map(\.value) == ["b6", "b7"])
        try await loop.run { store.value.close() }

        #expect(try await valuesAfterReopening(directory, "a", on: loop) == ["a1", "a2", "a3", "a4"])
    }

    /// A `sync: normal` store on `directory` and its log of `subject`.
    private func openNormal(
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
    private func appendInOnePass(
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
    private func rows(at path: String) throws -> [(last: Int64, count: Int64)] {
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

    @Test("the values a group commit appends to a subject share a row, up to 256; every read sees them one by one")
    func groupsShareARow() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/" + SQLiteStore.fileName
        let loop = TestLoop()
        let (store, log) = try await openNormal(directory, "runs", HistoryRetention(size: 10_000), on: loop)
        #expect(try await log.append(["lone": 1], on: loop).get() == 1)
        // Values of every kind, arrays included (a row of one array is not a run).
        let values: [Value] = (2...301).map { n in
            switch n % 4 {
            case 0: return .int(Int64(n))
            case 1: return .string("v\(n)")
            case 2: return .array([.int(Int64(n)), "a"])
            default: return ["n": .int(Int64(n))]
            }
        }
        #expect(try await appendInOnePass(values, to: log, on: loop) == Array(2...301))
        #expect(try await log.append(.array([1, 2]), on: loop).get() == 302)
        let stored = try rows(at: path)
        #expect(stored.map(\.last) == [1, 257, 301, 302])
        #expect(stored.map(\.count) == [1, 256, 44, 1])

        let all = try await log.read(after: 0, on: loop)
        #expect(all.map(\.offset) == Array(1...302))
        #expect(all.map(\.value) == [["lone": 1]] + values + [.array([1, 2])])
        // From the middle of a run, through the middle of the next, by pages.
        #expect(try await log.read(after: 100, through: 260, limit: 1000, on: loop).map(\.offset) == Array(101...260))
        #expect(try await log.read(after: 100, limit: 5, on: loop).map(\.offset) == Array(101...105))
        #expect(try await log.read(after: 256, through: 258, on: loop).map(\.value) == Array(values[255...256]))
        #expect(try await log.read(after: 301, on: loop).map(\.value) == [.array([1, 2])])
        try await loop.run { store.value.close() }

        // A restart finds the last value at the end of its row, and goes on from there.
        let (again, reopened) = try await openNormal(directory, "runs", HistoryRetention(size: 10_000), on: loop)
        _ = try await reopened.read(after: 300, on: loop)
        let position = try await reopened.position(on: loop)
        #expect(position.lastOffset == 302 && position.lastValue == .array([1, 2]))
        #expect(try await appendInOnePass(["x", "y"], to: reopened, on: loop) == [303, 304])
        #expect(try await reopened.read(after: 299, on: loop).map(\.offset) == Array(300...304))
        try await loop.run { again.value.close() }
    }

    /// A loop whose passes the test ends: the work a store gives itself for the end of
    /// the pass or the next one (``StoreExecutor/executeAtEndOfPass(_:)``,
    /// ``StoreExecutor/executeSoon(_:)``) waits for ``endPass()``.
    private final class PassingLoop: StoreExecutor, @unchecked Sendable {
        let loop = TestLoop()
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

    @Test("values appended in one pass go to the thread from the next pass, with what it appended: one group, one row")
    func severalValuesWaitAPass() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let executor = PassingLoop()
        let loop = executor.loop
        // A budget no commit reaches on a busy machine: a slow commit would leave the
        // next second's to the thread.
        let store = Confined(try SQLiteStore(
            directory: directory, sync: .normal, executor: executor, loopCommitBudget: .seconds(60)))
        let log = try await loop.run {
            Confined(try store.value.openLog(subject: "s", retention: HistoryRetention(size: 100)))
        }
        #expect(try await executor.endPass() == 0)
        let answered = executor.answeredCount
        let results = Confined(ResultBox())
        // A lone value: the loop commits it at the end of its pass, and its ack goes out then.
        try await loop.run { log.value.append(1) { results.value.add($0) } }
        #expect(try await executor.endPass() == 0)
        #expect(executor.answeredCount == answered + 1)
        try await loop.run { for value in [2, 3] as [Value] { log.value.append(value) { results.value.add($0) } } }
        #expect(try await executor.endPass() == 1, "two values wait a pass")
        try await loop.run { log.value.append(4) { results.value.add($0) } }
        #expect(try await executor.endPass() == 0)
        let offsets = await loop.callback { (done: @escaping ([UInt64]) -> Void) in
            results.value.whenCount(4) { done($0.compactMap { try? $0.get() }) }
        }
        #expect(offsets == [1, 2, 3, 4])
        #expect(executor.answeredCount == answered + 1, "the thread's outcomes come back as answers of their own")
        try await loop.run { store.value.close() }
        #expect(try rows(at: directory + "/" + SQLiteStore.fileName).map(\.count) == [1, 3])
    }

    @Test("a run that straddles the size bound keeps no value behind it for readers")
    func sizeBoundInsideARun() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        let (store, log) = try await openNormal(directory, "small", HistoryRetention(size: 3), on: loop)
        _ = try await appendInOnePass((1...10).map { .int($0) }, to: log, on: loop)
        #expect(try await log.read(after: 0, on: loop).map(\.value) == [8, 9, 10])
        _ = try await appendInOnePass([11, 12], to: log, on: loop)
        #expect(try await log.read(after: 0, on: loop).map(\.value) == [10, 11, 12])
        #expect(try await log.read(after: 10, on: loop).map(\.value) == [11, 12])
        try await loop.run { store.value.close() }
        // The bound holds after a restart too: the store opens with the subject's retention.
        let (again, reopened) = try await openNormal(directory, "small", HistoryRetention(size: 3), on: loop)
        #expect(try await reopened.read(after: 0, on: loop).map(\.value) == [10, 11, 12])
        try await loop.run { again.value.close() }
    }

    @Test("the ttl drops whole runs, and the subject keeps the last value of the last one")
    func ttlDropsRuns() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        let clock = ManualClock()
        let retention = HistoryRetention(size: 1000, ttl: .seconds(60))
        let (store, log) = try await openNormal(directory, "ttl", retention, clock: clock, on: loop)
        _ = try await appendInOnePass(["a", "b", "c"], to: log, on: loop)
        clock.advance(by: .seconds(30))
        _ = try await appendInOnePass(["d", "e"], to: log, on: loop)
        clock.advance(by: .seconds(40))
        // The first run is 70 s old, the second 40 s.
        #expect(try await log.read(after: 0, on: loop).map(\.value) == ["d", "e"])
        clock.advance(by: .seconds(30))
        // Both expired; a commit (of another subject) applies the ttl and keeps "e" in the row.
        let other = try await loop.run { Confined(try store.value.openLog(subject: "other", retention: HistoryRetention())) }
        _ = try await other.append("tick", on: loop).get()
        try await loop.run { _ = try store.value.openLog(subject: "ttl", retention: retention) }
        _ = try await other.append("tock", on: loop).get()
        #expect(try await log.read(after: 0, on: loop).isEmpty)
        try await loop.run { store.value.close() }
        let (again, reopened) = try await openNormal(directory, "ttl", retention, clock: clock, on: loop)
        let position = try await reopened.position(on: loop)
        #expect(position.lastOffset == 5 && position.lastValue == "e")
        #expect(try await reopened.append("f", on: loop).get() == 6)
        try await loop.run { again.value.close() }
    }

    @Test("a row that does not hold what its count says is a clear read error, not a crash or a wrong value")
    func malformedRows() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/" + SQLiteStore.fileName
        let loop = TestLoop()
        let (store, log) = try await openNormal(directory, "bad", HistoryRetention(), on: loop)
        _ = try await appendInOnePass(["a", "b", "c"], to: log, on: loop)
        try await loop.run { store.value.close() }
        // The run of three now holds two; another row says two but holds no JSON.
        try execute(
            """
            UPDATE entries SET value = '["a","b"]' WHERE count = 3;
            INSERT INTO entries(key, time, value, count) VALUES ((1 << 44) | 5, 1, 'not json', 2);
            """, on: path)
        let (again, reopened) = try await openNormal(directory, "bad", HistoryRetention(), on: loop)
        await #expect {
            _ = try await reopened.read(after: 0, on: loop)
        } throws: { error in
            "\(error)".contains("the row ending at offset 3 should hold an array of 3 values")
        }
        await #expect {
            _ = try await reopened.read(after: 3, on: loop)
        } throws: { error in
            "\(error)".contains("the row of the value at offset 5 is not JSON")
        }
        try await loop.run { again.value.close() }
    }

    @Test("a version 3 database gets the count column and is read as it is; new groups share rows")
    func readsVersion3() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/" + SQLiteStore.fileName
        try execute(
            """
            PRAGMA journal_mode = WAL;
            CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
            INSERT INTO meta(key, value) VALUES ('schema', '3');
            CREATE TABLE subjects(
                id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, epoch TEXT NOT NULL,
                last_offset INTEGER NOT NULL, last_time INTEGER NOT NULL, last_value BLOB);
            CREATE TABLE entries(key INTEGER PRIMARY KEY, time INTEGER NOT NULL, value BLOB NOT NULL);
            INSERT INTO subjects VALUES (1, 'a', 'epoch-a', 0, 0, NULL);
            INSERT INTO entries VALUES ((1 << 44) | 1, 10, '"a1"'), ((1 << 44) | 2, 11, '[1,2]'), ((1 << 44) | 3, 12, '"a3"');
            """, on: path)
        let loop = TestLoop()
        let (store, log) = try await openNormal(directory, "a", HistoryRetention(), on: loop)
        #expect(try await log.read(after: 0, on: loop).map(\.value) == ["a1", [1, 2], "a3"])
        #expect(try await log.position(on: loop).epoch == "epoch-a")
        #expect(try await appendInOnePass(["a4", "a5"], to: log, on: loop) == [4, 5])
        try await loop.run { store.value.close() }
        #expect(try rows(at: path).map(\.count) == [1, 1, 1, 2])
        #expect(try await valuesAfterReopening(directory, "a", on: loop) == ["a1", [1, 2], "a3", "a4", "a5"])
    }

    @Test("once subject ids reach the largest a key holds, a new subject takes the smallest free one")
    func reusesFreeSubjectIDs() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        let path = directory + "/" + SQLiteStore.fileName
        let first = Confined(try SQLiteStore(directory: directory, executor: loop))
        let low = try await loop.run { Confined(try first.value.openLog(subject: "low", retention: HistoryRetention())) }
        _ = try await low.append("low-1", on: loop).get()
        try await loop.run { first.value.close() }
        // A subject with the largest id, as after half a million subjects came and went.
        try execute(
            """
            INSERT INTO subjects VALUES (524287, 'high', 'epoch-high', 0, 0, NULL);
            INSERT INTO entries(key, time, value) VALUES ((524287 << 44) | 1, 1, '"high-1"');
            """, on: path)

        let second = Confined(try SQLiteStore(directory: directory, executor: loop))
        let fresh = try await loop.run { Confined(try second.value.openLog(subject: "fresh", retention: HistoryRetention())) }
        #expect(try await fresh.append("fresh-1", on: loop).get() == 1)
        let high = try await loop.run { Confined(try second.value.openLog(subject: "high", retention: HistoryRetention())) }
        #expect(try await high.append("high-2", on: loop).get() == 2)
        try await loop.run { second.value.close() }

        for (name, values) in [("low", ["low-1"]), ("fresh", ["fresh-1"]), ("high", ["high-1", "high-2"])] {
            #expect(try await valuesAfterReopening(directory, name, on: loop) == values.map { Value.string($0) }, "\(name)")
        }
        var handle: OpaquePointer?
        sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, SQLiteStore.checksummingVFS)
        defer { sqlite3_close(handle) }
        var statement: OpaquePointer?
        sqlite3_prepare_v2(handle, "SELECT id FROM subjects WHERE name = 'fresh'", -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        #expect(sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_int64(statement, 0) == 2)
    }

    @Test("a version 2 database with an offset beyond version 3's keys is refused, and left as it was")
    func refusesUnkeyableVersion2() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = try makeVersion2Database(in: directory, entries: "INSERT INTO entries VALUES (1, 17592186044416, 10, '1');")
        #expect {
            _ = try SQLiteStore(directory: directory, executor: TestLoop())
        } throws: { error in
            "\(error)".contains("offsets above 17592186044415") && "\(error)".contains(path)
        }
        try execute("SELECT subject FROM entries", on: path)
    }

    @Test("the sync policy is the database's synchronous setting")
    func syncPolicy() async throws {
        for sync in SQLiteStore.Sync.allCases {
            let directory = temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let loop = TestLoop()
            let store = Confined(try SQLiteStore(directory: directory, sync: sync, executor: loop))
            #expect(store.value.sync == sync)
            let log = try await loop.run { Confined(try store.value.openLog(subject: "s", retention: HistoryRetention())) }
            #expect(try await log.append(1, on: loop).get() == 1)
            try await loop.run { store.value.close() }
        }
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
