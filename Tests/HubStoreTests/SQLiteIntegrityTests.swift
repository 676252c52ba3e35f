import CSQLite
import CSQLiteVFS
import Foundation
import HubRegistry
import HubSQLite
import HubValue
import HubWire
import Testing

/// Damage at rest and a disk that refuses writes: the store never serves a damaged value
/// as good, names what is damaged, sets aside only the damaged subjects when told to, and
/// refuses appends with `storage_unavailable` (no ack) while its disk is full.
@Suite("SQLite store: damage and failing disks")
struct SQLiteIntegrityTests {
    private func temporaryDirectory() -> String {
        NSTemporaryDirectory() + "hub-integrity-tests-" + UUID().uuidString
    }

    /// A store in `directory` holding `count` values of each subject (padded with the
    /// subject's first letter), appended one subject after the other and committed one
    /// value at a time; closed cleanly.
    private func fill(_ directory: String, _ subjects: [String: Int], on loop: TestLoop) async throws -> [String: String] {
        let store = Confined(try SQLiteStore(directory: directory, executor: loop))
        var epochs: [String: String] = [:]
        for (subject, count) in subjects.sorted(by: { $0.key < $1.key }) {
            let log = try await loop.run { Confined(try store.value.openLog(subject: subject, retention: HistoryRetention(size: 100_000))) }
            for n in 1...count {
                let pad = String(repeating: String(subject.prefix(1)), count: 500)
                _ = try await log.append(["n": .int(Int64(n)), "pad": .string(pad)], on: loop).get()
            }
            epochs[subject] = try await log.position(on: loop).epoch
        }
        try await loop.run { store.value.close() }
        return epochs
    }

    /// The first page of `path` that holds `marker` in its bytes (1-based).
    private func page(of marker: String, in path: String) throws -> Int {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let needle = Array(marker.utf8)
        for start in 0...(data.count - needle.count) where data[start..<(start + needle.count)].elementsEqual(needle) {
            return start / 4096 + 1
        }
        throw SQLiteError(code: -1, message: "\(marker) not found in \(path)")
    }

    private func flip(_ path: String, at offset: Int, count: Int = 16) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let bytes = try handle.read(upToCount: count) ?? Data()
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(bytes.map { $0 ^ 0x5A }))
    }

    @Test("a new database keeps 8 bytes a page for checksums, and every page's checksum holds")
    func newDatabasesHaveChecksums() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        _ = try await fill(directory, ["a": 50], on: loop)
        let header = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + SQLiteStore.fileName)).prefix(100))
        #expect(header[20] == 8)
        // Reopening checks every page: a clean store opens with nothing to report.
        let store = Confined(try SQLiteStore(directory: directory, executor: loop))
        #expect(try await loop.run { store.value.integrityNotices.isEmpty && store.value.quarantined.isEmpty })
        try await loop.run { store.value.close() }
    }

    @Test("flipped bytes in one subject's page: refused naming the file and the subject; quarantined, only that subject starts over")
    func damagedPageRefusedThenQuarantined() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        let epochs = try await fill(directory, ["victim": 40, "bystander": 40], on: loop)
        let path = directory + "/" + SQLiteStore.fileName
        // A leaf page in the middle of the victim's values, which holds none of the bystander's.
        let target = try page(of: #"{"n":20,"pad":"vvvv"#, in: path)
        let pristine = try Data(contentsOf: URL(fileURLWithPath: path))
        try flip(path, at: (target - 1) * 4096 + 1000)

        #expect {
            _ = try SQLiteStore(directory: directory, executor: loop)
        } throws: { error in
            let text = "\(error)"
            return text.contains(path) && text.contains("fail their checksum") && text.contains("'victim'")
                && !text.contains("'bystander'") && text.contains("Nothing was changed")
        }
        // Refusing changed nothing.
        let after = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(after.count == pristine.count)

        let store = Confined(try SQLiteStore(directory: directory, executor: loop, onCorruption: .quarantine))
        #expect(try await loop.run { store.value.quarantined } == ["victim"])
        let victim = try await loop.run { Confined(try store.value.openLog(subject: "victim", retention: HistoryRetention(size: 100_000))) }
        let bystander = try await loop.run { Confined(try store.value.openLog(subject: "bystander", retention: HistoryRetention(size: 100_000))) }
        let victimPosition = try await victim.position(on: loop)
        #expect(victimPosition.epoch != epochs["victim"] && victimPosition.lastOffset == 0)
        #expect(try await victim.read(after: 0, on: loop).isEmpty)
        #expect(try await bystander.position(on: loop).epoch == epochs["bystander"])
        let kept = try await bystander.read(after: 0, on: loop)
        #expect(kept.map(\.offset) == Array(1...40))
        #expect(kept.compactMap { $0.value.objectValue?["n"]?.intValue } == Array(1...40))
        #expect(try await victim.append("again", on: loop).get() == 1)
        try await loop.run { store.value.close() }
        let folders = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("quarantine-") }
        #expect(folders.count == 1)
        let copied = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + folders[0] + "/" + SQLiteStore.fileName))
        #expect(copied == after, "the damaged file is kept as it was")
    }

    @Test("a truncated database is refused, saying how many pages are missing")
    func truncatedDatabase() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        _ = try await fill(directory, ["a": 60], on: loop)
        let path = directory + "/" + SQLiteStore.fileName
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        #expect(truncate(path, off_t(size - 4096 * 3 - 100)) == 0)
        #expect {
            _ = try SQLiteStore(directory: directory, executor: loop)
        } throws: { error in
            "\(error)".contains("truncated") && "\(error)".contains("'a'")
        }
    }

    @Test("a damaged WAL frame that later commits follow is refused; SQLite alone would have dropped them silently")
    func damagedWALFrame() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        _ = try await fill(directory, ["w": 5], on: loop)
        let path = directory + "/" + SQLiteStore.fileName
        // Commits left in the WAL, as a crash leaves them: a connection that does not copy
        // the WAL into the database when it closes.
        var handle: OpaquePointer?
        #expect(sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, SQLiteStore.checksummingVFS) == SQLITE_OK)
        #expect(sqlite3_exec(handle, "PRAGMA journal_mode = WAL", nil, nil, nil) == SQLITE_OK)
        for n in 6...30 {
            let sql = "INSERT INTO entries(key, time, value, count) VALUES ((1 << 44) | \(n), 1, '{\"n\":\(n)}', 1)"
            #expect(sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK)
        }
        #expect(hub_sqlite_keep_wal_on_close(UnsafeMutableRawPointer(handle)) == SQLITE_OK)
        sqlite3_close(handle)
        let wal = path + "-wal"
        // Frame 3 of many: its page bytes changed.
        try flip(wal, at: 32 + 2 * (24 + 4096) + 24 + 2000)
        #expect {
            _ = try SQLiteStore(directory: directory, executor: loop)
        } throws: { error in
            "\(error)".contains(wal) && "\(error)".contains("frame 3") && "\(error)".contains("'w'")
        }
        let store = Confined(try SQLiteStore(directory: directory, executor: loop, onCorruption: .quarantine))
        #expect(try await loop.run { store.value.quarantined } == ["w"])
        try await loop.run { store.value.close() }
    }

    @Test("a damaged frame of the WAL's last transaction: damage on the same boot, a possible power cut on another")
    func damagedLastTransaction() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        _ = try await fill(directory, ["t": 5], on: loop)
        let path = directory + "/" + SQLiteStore.fileName
        var handle: OpaquePointer?
        #expect(sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, SQLiteStore.checksummingVFS) == SQLITE_OK)
        #expect(sqlite3_exec(handle, "PRAGMA journal_mode = WAL", nil, nil, nil) == SQLITE_OK)
        // One transaction of many pages, the WAL's last.
        var sql = "BEGIN;"
        for n in 6...40 {
            sql += "INSERT INTO entries(key, time, value, count) VALUES ((1 << 44) | \(n), 1, '{\"n\":\(n),\"pad\":\"\(String(repeating: "z", count: 1500))\"}', 1);"
        }
        #expect(sqlite3_exec(handle, sql + "COMMIT", nil, nil, nil) == SQLITE_OK)
        #expect(hub_sqlite_keep_wal_on_close(UnsafeMutableRawPointer(handle)) == SQLITE_OK)
        sqlite3_close(handle)
        let wal = path + "-wal"
        let walCopy = try Data(contentsOf: URL(fileURLWithPath: wal))
        let frames = (walCopy.count - 32) / (24 + 4096)
        #expect(frames > 4)
        // The transaction's first frame: intact frames, its commit included, follow it.
        var damaged = walCopy
        damaged[32 + 24 + 1000] ^= 0x40
        try damaged.write(to: URL(fileURLWithPath: wal))
        #expect {
            _ = try SQLiteStore(directory: directory, executor: loop)
        } throws: { error in
            "\(error)".contains("frame 1 of \(frames) is damaged") && "\(error)".contains("'t'")
        }
        // Another boot: a power cut can leave the same picture of a commit that never
        // completed; SQLite drops it, and the broker says so.
        let store = Confined(try SQLiteStore(
            directory: directory, executor: loop, faults: SQLiteStore.FaultInjection(bootID: "after-a-power-cut")))
        #expect(try await loop.run { store.value.quarantined.isEmpty })
        let log = try await loop.run { Confined(try store.value.openLog(subject: "t", retention: HistoryRetention(size: 100_000))) }
        #expect(try await log.position(on: loop).lastOffset == 5)
        try await loop.run { store.value.close() }
    }

    @Test("a full disk: appends fail with storage_unavailable and no offset; what was stored stays; back once the disk is")
    func fullDisk() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let control = directory + "/faults"
        try #require(FileManager.default.createFile(atPath: control, contents: Data()))
        let loop = TestLoop()
        let store = Confined(try SQLiteStore(
            directory: directory, executor: loop, faults: SQLiteStore.FaultInjection(controlFile: control)))
        let log = try await loop.run { Confined(try store.value.openLog(subject: "d", retention: HistoryRetention())) }
        #expect(try await log.append("before", on: loop).get() == 1)
        try "full\n".write(toFile: control, atomically: false, encoding: .utf8)
        let refused = await log.append("refused", on: loop)
        guard case let .failure(error) = refused else {
            Issue.record("an append on a full disk succeeded: \(refused)")
            return
        }
        #expect(error.code == .storageUnavailable)
        #expect(error.message.contains("subject 'd'") && error.message.contains("disk is full"))
        #expect(try await loop.run { store.value.unavailableReason }?.contains("disk is full") == true)
        try "".write(toFile: control, atomically: false, encoding: .utf8)
        #expect(try await log.append("after", on: loop).get() == 2)
        #expect(try await loop.run { store.value.unavailableReason } == nil)
        #expect(try await log.read(after: 0, on: loop).map(\.value) == ["before", "after"])
        try await loop.run { store.value.close() }
    }

    @Test("a store left open with sync: normal on a machine that stopped begins new epochs; a kill -9 or sync: full does not")
    func machineStoppedUnderSyncNormal() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = TestLoop()
        let path = directory + "/" + SQLiteStore.fileName
        func open(boot: String, sync: SQLiteStore.Sync) async throws -> (String, [Value]) {
            let store = Confined(try SQLiteStore(
                directory: directory, sync: sync, executor: loop, faults: SQLiteStore.FaultInjection(bootID: boot)))
            let log = try await loop.run { Confined(try store.value.openLog(subject: "s", retention: HistoryRetention())) }
            let epoch = try await log.position(on: loop).epoch
            let values = try await log.read(after: 0, on: loop).map(\.value)
            try await loop.run { store.value.close() }
            return (epoch, values)
        }
        /// As a store that never closed: its run is still marked open.
        func leaveOpen(_ mark: String) throws {
            var handle: OpaquePointer?
            #expect(sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, SQLiteStore.checksummingVFS) == SQLITE_OK)
            defer { sqlite3_close(handle) }
            #expect(sqlite3_exec(handle, "UPDATE meta SET value = '\(mark)' WHERE key = 'run'", nil, nil, nil) == SQLITE_OK)
        }
        let store = Confined(try SQLiteStore(
            directory: directory, sync: .normal, executor: loop, faults: SQLiteStore.FaultInjection(bootID: "boot-1")))
        let log = try await loop.run { Confined(try store.value.openLog(subject: "s", retention: HistoryRetention())) }
        _ = try await log.append("kept", on: loop).get()
        let first = try await log.position(on: loop).epoch
        try await loop.run { store.value.close() }

        // Closed cleanly, then opened on another boot: the same epoch.
        #expect(try await open(boot: "boot-2", sync: .normal) == (first, ["kept"]))
        // Left open on the same boot (kill -9): the same epoch.
        try leaveOpen("boot-2 open normal")
        #expect(try await open(boot: "boot-2", sync: .normal) == (first, ["kept"]))
        // Left open with sync: full on another boot: the same epoch (its acks were synced).
        try leaveOpen("boot-2 open full")
        #expect(try await open(boot: "boot-3", sync: .normal) == (first, ["kept"]))
        // Left open with sync: normal, then another boot: a new epoch, the values kept.
        try leaveOpen("boot-3 open normal")
        let (renewed, values) = try await open(boot: "boot-4", sync: .normal)
        #expect(renewed != first && values == ["kept"])
    }

    @Test("fault injection is parsed from its environment form, and refused when malformed")
    func faultInjectionParsing() {
        #expect(SQLiteStore.FaultInjection(parsing: "cut=12,seed=3,control=/tmp/x,boot=b")
            == SQLiteStore.FaultInjection(cutAfter: 12, seed: 3, controlFile: "/tmp/x", bootID: "b"))
        #expect(SQLiteStore.FaultInjection(parsing: "") == SQLiteStore.FaultInjection())
        #expect(SQLiteStore.FaultInjection(parsing: "cut=-1") == nil)
        #expect(SQLiteStore.FaultInjection(parsing: "power=1") == nil)
    }
}
