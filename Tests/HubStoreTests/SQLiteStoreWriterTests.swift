import CSQLite
import Foundation
import HubRegistry
import HubSQLite
import HubValue
import HubWire
import NetworkTestSupport
import Testing

/// The store never blocks the loop on the disk: commits on the loop or its thread, their budget, what waits for the disk bounded in bytes, the sync policy.
@Suite("SQLite store: the writer")
struct SQLiteStoreWriterTests: SQLiteStoreTesting {
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
