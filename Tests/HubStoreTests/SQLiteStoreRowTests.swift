import CSQLite
import Foundation
import HubRegistry
import HubSQLite
import HubValue
import HubWire
import NetworkTestSupport
import Testing

/// Group commits share rows: how values are grouped, read one by one, bounded by size and ttl, and a malformed row reported.
@Suite("SQLite store: shared rows and retention")
struct SQLiteStoreRowTests: SQLiteStoreTesting {
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
}
