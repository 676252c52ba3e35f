import CSQLite
import Foundation
import HubRegistry
import HubSQLite
import HubValue
import HubWire
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
            guard sqlite3_open(path, &handle) == SQLITE_OK else { throw SQLiteError(code: -1, message: "open \(path)") }
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

    @Test("a stuck disk delays appends, not the loop; readers go on; the appends complete in order once it answers")
    func stuckDisk() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        let store = Confined(try SQLiteStore(directory: directory, sync: .full, executor: loop))
        let log = try await loop.run { Confined(try store.value.openLog(subject: "slow", retention: HistoryRetention())) }
        #expect(try await log.append("before", on: loop).get() == 1)

        let blocker = try BlockingWriter(path: directory + "/" + SQLiteStore.fileName)
        let results = Confined(ResultBox())
        try await loop.run {
            for index in 1...3 {
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
