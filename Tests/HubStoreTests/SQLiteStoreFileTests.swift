import CSQLite
import Foundation
import HubRegistry
import HubSQLite
import HubValue
import HubWire
import NetworkTestSupport
import Testing

/// Files the store is given: not a database, a directory it cannot make, older schema versions read or migrated, an unkeyable one refused, subject ids reused.
@Suite("SQLite store: its files and schema versions")
struct SQLiteStoreFileTests: SQLiteStoreTesting {
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
}
