import CSQLite
import Foundation
import HubRegistry
import HubSQLite
import HubValue
import HubWire
import NetworkTestSupport
import Testing

/// The WAL checkpointed in the background and bounded.
@Suite("SQLite store: WAL checkpoints")
struct SQLiteStoreCheckpointTests: SQLiteStoreTesting {
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
}
