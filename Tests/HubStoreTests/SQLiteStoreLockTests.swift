import CSQLite
import Foundation
import HubRegistry
import HubSQLite
import HubValue
import HubWire
import NetworkTestSupport
import Testing

/// The store owns its directory: one broker a directory, other processes refused or let in as `storage.shared` says.
@Suite("SQLite store: the directory lock")
struct SQLiteStoreLockTests: SQLiteStoreTesting {
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
}
