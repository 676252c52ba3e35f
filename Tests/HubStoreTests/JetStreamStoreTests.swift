import Foundation
import HubCluster
import HubEngine
import HubRegistry
import HubValue
import HubWire
import Logging
import NetworkTestSupport
import Testing

/// What the JetStream store does beyond the conformance suite: a stream shared by
/// the stores of several nodes, and the bound on appends waiting for their acks.
@Suite("JetStream store")
struct JetStreamStoreTests {
    private let logger = Logger(label: "store-tests.jetstream")

    private func store(
        _ nats: NATSServerProcess, name: String, loop: TestLoop, maxPendingAppends: Int = JetStreamStore.defaultMaxPendingAppends
    ) throws -> (NATSConnection, Confined<any SubjectStore>) {
        var options = NATSConnection.Options(urls: [nats.url], name: name)
        options.sendImmediately = true
        let connection = try NATSConnection(options: options, logger: logger)
        let store = try JetStreamStore(
            connection: connection, storage: .memory, executor: loop, maxPendingAppends: maxPendingAppends, logger: logger)
        return (connection, Confined(store))
    }

    private func open(_ store: Confined<any SubjectStore>, _ subject: String, on loop: TestLoop) async throws -> Confined<any SubjectLog> {
        try await loop.run { Confined(try store.value.openLog(subject: subject, retention: HistoryRetention(size: 100))) }
    }

    /// Two nodes' stores (a and b) over one nats-server with JetStream, each with the log
    /// of one subject open.
    struct TwoNodes {
        let nats: NATSServerProcess
        let loop: TestLoop
        let connections: [NATSConnection]
        let storeA: Confined<any SubjectStore>
        let storeB: Confined<any SubjectStore>
        let logA: Confined<any SubjectLog>
        let logB: Confined<any SubjectLog>

        /// Closes the connections and stops the server.
        func stop() {
            for connection in connections { connection.close() }
            nats.stop()
        }
    }

    private func twoNodes(sharing subject: String) async throws -> TwoNodes {
        let nats = try await NATSServerProcess(jetStream: true)
        let loop = TestLoop()
        let (connectionA, storeA) = try store(nats, name: "a", loop: loop)
        let (connectionB, storeB) = try store(nats, name: "b", loop: loop)
        return TwoNodes(
            nats: nats, loop: loop, connections: [connectionA, connectionB], storeA: storeA, storeB: storeB,
            logA: try await open(storeA, subject, on: loop), logB: try await open(storeB, subject, on: loop))
    }

    @Test("two nodes' stores share a subject's stream: one epoch, one sequence, every value committed once in order on each")
    func sharedStream() async throws {
        let nodes = try await twoNodes(sharing: "shared.prices")
        defer { nodes.stop() }
        let (loop, storeA, storeB, logA, logB) = (nodes.loop, nodes.storeA, nodes.storeB, nodes.logA, nodes.logB)
        let a = try await logA.position(on: loop)
        let b = try await logB.position(on: loop)
        #expect(a.epoch == b.epoch)

        let committed = Confined(CommitRecorder())
        try await loop.run { logA.value.onCommit = { committed.value.entries.append($0) } }
        #expect(try await logA.append(1, on: loop).get() == 1)
        #expect(try await logB.append(2, on: loop).get() == 2)
        #expect(try await logB.append(3, on: loop).get() == 3)
        #expect(try await logA.append(4, on: loop).get() == 4)
        // A learns of B's values (2, 3) when its own next ack shows the gap, before 4.
        let seen = try await loop.run { committed.value.entries }
        #expect(seen.map(\.offset) == [1, 2, 3, 4])
        #expect(seen.map(\.value) == [1, 2, 3, 4])
        #expect(try await logB.read(after: 0, on: loop).map(\.value) == [1, 2, 3, 4])
        #expect(try await logA.position(on: loop).lastValue == 4)
        _ = try? await loop.run { storeA.value.close(); storeB.value.close() }
    }

    @Test("appends waiting for their acks are bounded: beyond the bound they fail with limit_exceeded at once")
    func pendingBound() async throws {
        let nats = try await NATSServerProcess(jetStream: true)
        defer { nats.stop() }
        let loop = TestLoop()
        let (connection, store) = try store(nats, name: "a", loop: loop, maxPendingAppends: 2)
        defer { connection.close() }
        let log = try await open(store, "bounded", on: loop)
        let results: [Result<UInt64, HubError>] = await loop.callback { done in
            var results: [Result<UInt64, HubError>] = []
            for index in 1...5 {
                log.value.append(.int(Int64(index))) { result in
                    results.append(result)
                    if results.count == 5 { done(results) }
                }
            }
        }
        let refused = results.filter { if case let .failure(error) = $0 { error.code == .limitExceeded } else { false } }
        #expect(refused.count == 3)
        #expect(results.compactMap { try? $0.get() }.sorted() == [1, 2])
        #expect(try await log.append(6, on: loop).get() == 3)
        _ = try? await loop.run { store.value.close() }
    }
}

/// Values a test's ``SubjectLog/onCommit`` saw (used on the loop only).
final class CommitRecorder {
    var entries: [HistoryEntry] = []
}

extension JetStreamStoreTests {
    @Test("a following store reports the values another node stores, in order, once each, interleaved with its own")
    func following() async throws {
        let nodes = try await twoNodes(sharing: "followed")
        defer { nodes.stop() }
        let (loop, storeA, storeB, logA, logB) = (nodes.loop, nodes.storeA, nodes.storeB, nodes.logA, nodes.logB)
        #expect(try await logB.append(0, on: loop).get() == 1)
        let count = 300
        let seen: [HistoryEntry] = try await withThrowingTaskGroup(of: [HistoryEntry].self) { group in
            group.addTask {
                await loop.callback { done in
                    var entries: [HistoryEntry] = []
                    logA.value.onCommit = { entry in
                        entries.append(entry)
                        if entry.offset == UInt64(count) + 1 { done(entries) }
                    }
                    try? (storeA.value as! JetStreamStore).setFollowing(true, subject: "followed")
                }
            }
            // B stores most values, A some: A's commits must be every one, in order.
            for index in 1...count {
                if index % 10 == 0 {
                    _ = try await logA.append(.int(Int64(index)), on: loop).get()
                } else {
                    _ = try await logB.append(.int(Int64(index)), on: loop).get()
                }
            }
            return try await group.next()!
        }
        // A opened the log before B's first value: it reports that one too.
        #expect(seen.map(\.offset) == (1...UInt64(count + 1)).map { $0 })
        #expect(seen.map(\.value) == (0...count).map { Value.int(Int64($0)) })
        try await loop.run {
            try (storeA.value as! JetStreamStore).setFollowing(false, subject: "followed")
            storeA.value.close()
            storeB.value.close()
        }
    }
}

extension JetStreamStoreTests {
    /// Prints what an append costs against a local nats-server (README, "Cluster"): the
    /// round trip of one append at a time, and the rate of appends issued together.
    @Test("figures: append round trip and rate against a local nats-server (printed)")
    func appendFigures() async throws {
        let nats = try await NATSServerProcess(jetStream: true)
        defer { nats.stop() }
        let loop = TestLoop()
        let (connection, store) = try store(nats, name: "figures", loop: loop)
        defer { connection.close() }
        let log = try await open(store, "figures", on: loop)
        let clock = ContinuousClock()
        var rounds: [Duration] = []
        for index in 1...300 {
            let start = clock.now
            _ = try await log.append(.int(Int64(index)), on: loop).get()
            rounds.append(start.duration(to: clock.now))
        }
        rounds.sort()
        let count = 2000
        let start = clock.now
        _ = await loop.callback { (done: @escaping (Bool) -> Void) in
            for index in 1...count {
                log.value.append(.int(Int64(index))) { _ in if index == count { done(true) } }
            }
        }
        let elapsed = start.duration(to: clock.now)
        let rate = Double(count) / (Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds))
        print("jetstream append (memory stream): round trip p50 \(rounds[rounds.count / 2]), p99 \(rounds[rounds.count * 99 / 100]); \(count) issued together: \(Int(rate)) appends/s")
        #expect(try await log.position(on: loop).lastOffset == UInt64(300 + count))
        _ = try? await loop.run { store.value.close() }
    }

    // MARK: Checkpoints of running pipelines

    private func commit(
        _ checkpoint: Value, pipeline: String, values: [Value], to log: Confined<any SubjectLog>,
        in store: Confined<any SubjectStore>, on loop: TestLoop
    ) async -> Result<Void, HubError> {
        await loop.callback { done in
            store.value.commit(checkpoint: checkpoint, pipeline: pipeline, appending: {
                for value in values { log.value.append(value) { _ in } }
            }, completion: done)
        }
    }

    private func load(_ pipeline: String, from store: Confined<any SubjectStore>, on loop: TestLoop) async -> Result<Value?, HubError> {
        await loop.callback { done in store.value.loadCheckpoint(pipeline: pipeline, completion: done) }
    }

    @Test("the node that took a pipeline over fences the one that ran it: a commit after its takeover is refused, its values never stored")
    func fencing() async throws {
        let nodes = try await twoNodes(sharing: "fenced.totals")
        defer { nodes.stop() }
        let (loop, storeA, storeB, logA) = (nodes.loop, nodes.storeA, nodes.storeB, nodes.logA)
        #expect(try await load("counter", from: storeA, on: loop).get() == nil)
        #expect((try? await commit(["sum": 1], pipeline: "counter", values: [1], to: logA, in: storeA, on: loop).get()) != nil)
        // B takes the pipeline over: it reads the checkpoint and commits.
        #expect(try await load("counter", from: storeB, on: loop).get() == ["sum": 1])
        #expect((try? await commit(["sum": 3], pipeline: "counter", values: [3], to: nodes.logB, in: storeB, on: loop).get()) != nil)
        // A, which has not heard, commits: refused, its value not stored.
        let late = await commit(["sum": 10], pipeline: "counter", values: [10], to: logA, in: storeA, on: loop)
        guard case let .failure(error) = late else {
            Issue.record("a fenced commit succeeded")
            return
        }
        #expect(error.data?["reason"] == "fenced")
        #expect(try await nodes.logB.read(after: 0, on: loop).map(\.value) == [1, 3])
        #expect(try await load("counter", from: storeB, on: loop).get() == ["sum": 3])
        _ = try? await loop.run { storeA.value.close(); storeB.value.close() }
    }

    @Test("a checkpoint written ahead of its values has them published again by the next reader, each stored once")
    func writeAheadValuesArePublishedAgainOnce() async throws {
        let nodes = try await twoNodes(sharing: "ahead.totals")
        defer { nodes.stop() }
        let (loop, storeA, storeB, logA) = (nodes.loop, nodes.storeA, nodes.storeB, nodes.logA)
        #expect(try await load("counter", from: storeA, on: loop).get() == nil)
        #expect((try? await commit(["sum": 3], pipeline: "counter", values: [1, 2], to: logA, in: storeA, on: loop).get()) != nil)
        // A node that crashed after writing its checkpoint ahead, before settling it: the
        // record still holds the values, with the ids they were published with (the first
        // commit's: the revision before it, 0, and their places).
        let (connection, bucket) = try await loop.run { () -> (NATSConnection, NATSKeyValue) in
            var options = NATSConnection.Options(urls: [nodes.nats.url], name: "crashed")
            options.sendImmediately = true
            let connection = try NATSConnection(options: options, logger: logger)
            return (connection, try NATSKeyValue(connection: connection, bucket: "hub_checkpoints", maxValueBytes: 1 << 20, onDisk: true))
        }
        defer { connection.close() }
        let (stored, revision) = try #require(try bucket.entry("counter"))
        #expect(try Value.parse(stored)["outputs"] == [])
        let ahead: Value = [
            "checkpoint": ["sum": 3],
            "outputs": [
                ["subject": "hub.h.ahead.totals", "value": 1, "time": 1, "id": "counter:0:0"],
                ["subject": "hub.h.ahead.totals", "value": 2, "time": 1, "id": "counter:0:1"],
            ],
        ]
        var bytes: [UInt8] = []
        ahead.writeJSON(into: &bytes)
        #expect(try bucket.update("counter", bytes, last: revision) != nil)
        // The next reader publishes them again: the stream keeps each id once.
        #expect(try await load("counter", from: storeB, on: loop).get() == ["sum": 3])
        #expect(try await nodes.logB.read(after: 0, on: loop).map(\.value) == [1, 2])
        _ = try? await loop.run { storeA.value.close(); storeB.value.close() }
    }
}

// MARK: Tables

extension JetStreamStoreTests {
    private static let tableRetention = HistoryRetention(size: 100, keepsLatestPerKey: true)

    private func change(_ key: String, _ value: Value) -> Value { ["key": .string(key), "value": value] }

    private func openTable(_ store: Confined<any SubjectStore>, _ subject: String, on loop: TestLoop) async throws -> Confined<any SubjectLog> {
        try await loop.run { Confined(try store.value.openLog(subject: subject, retention: Self.tableRetention)) }
    }

    /// The live keys' changes of `log`, by key.
    private func rows(_ log: Confined<any SubjectLog>, on loop: TestLoop) async throws -> [String: Value] {
        try await loop.run {
            Dictionary(uniqueKeysWithValues: log.value.latestPerKey.map { (TableChange.key(of: $0.value)!, $0.value) })
        }
    }

    @Test("a table's stream keeps each key's last change: a store opened again has every live key, and the stream holds one message per key however many updates")
    func tableSurvivesAReopenAndStaysOneMessagePerKey() async throws {
        let nats = try await NATSServerProcess(jetStream: true)
        defer { nats.stop() }
        let loop = TestLoop()
        let (first, storeA) = try store(nats, name: "a", loop: loop)
        let log = try await openTable(storeA, "positions", on: loop)
        for index in 1...60 {
            let key = ["AAPL", "MSFT", "GOOG"][index % 3]
            #expect(try await log.append(change(key, .int(Int64(index))), on: loop).get() == UInt64(index))
        }
        #expect(try await log.append(change("GOOG", .null), on: loop).get() == 61)
        // A change that is not one is refused before it is published.
        if case .success = await log.append(["value": 1], on: loop) { Issue.record("a value without a key was stored") }
        let expected: [String: Value] = ["AAPL": change("AAPL", 60), "MSFT": change("MSFT", 58)]
        #expect(try await rows(log, on: loop) == expected)
        _ = try? await loop.run { storeA.value.close() }
        first.close()

        // The broker restarts: its new store reads the table back from the stream.
        let (second, storeB) = try store(nats, name: "b", loop: loop)
        defer { second.close() }
        let reopened = try await openTable(storeB, "positions", on: loop)
        #expect(try await rows(reopened, on: loop) == expected)
        #expect(try await reopened.position(on: loop).lastOffset == 61)
        // One message per key (the deleted key's null included), not one per update; the
        // changes after an offset, gaps and all, bring a table up to date.
        #expect(try await reopened.read(after: 0, on: loop).map(\.value) == [change("MSFT", 58), change("AAPL", 60), change("GOOG", .null)])
        #expect(try await reopened.read(after: 58, on: loop).map(\.offset) == [60, 61])
        #expect(try await reopened.append(change("IBM", 1), on: loop).get() == 62)
        #expect(try await rows(reopened, on: loop)["IBM"] == change("IBM", 1))
        _ = try? await loop.run { storeB.value.close() }
    }

    @Test("every node's table follows the table's stream, subscribers or not: each has the changes the others store", .timeLimit(.minutes(1)))
    func everyNodeFollowsATable() async throws {
        let nats = try await NATSServerProcess(jetStream: true)
        defer { nats.stop() }
        let loop = TestLoop()
        let (connectionA, storeA) = try store(nats, name: "a", loop: loop)
        let (connectionB, storeB) = try store(nats, name: "b", loop: loop)
        defer { connectionA.close(); connectionB.close() }
        let logA = try await openTable(storeA, "shared.positions", on: loop)
        let logB = try await openTable(storeB, "shared.positions", on: loop)
        let count = 100
        let seen: [HistoryEntry] = try await withThrowingTaskGroup(of: [HistoryEntry].self) { group in
            group.addTask {
                await loop.callback { done in
                    var entries: [HistoryEntry] = []
                    logB.value.onCommit = { entry in
                        entries.append(entry)
                        if entry.offset == UInt64(count) { done(entries) }
                    }
                }
            }
            for index in 1...count {
                let key = "k\(index % 7)"
                if index % 10 == 0 {
                    _ = try await logB.append(change(key, .int(Int64(index))), on: loop).get()
                } else {
                    _ = try await logA.append(change(key, .int(Int64(index))), on: loop).get()
                }
            }
            return try await group.next()!
        }
        // B reported each change once, in order (a key's change already replaced by the time
        // B read it may be missing: the stream keeps each key's last one).
        #expect(seen.map(\.offset) == seen.map(\.offset).sorted())
        #expect(Set(seen.map(\.offset)).count == seen.count)
        let latest = Dictionary((1...count).map { ("k\($0 % 7)", change("k\($0 % 7)", .int(Int64($0)))) }, uniquingKeysWith: { _, last in last })
        #expect(try await rows(logB, on: loop) == latest)
        #expect(try await rows(logA, on: loop) == latest)
        // Followed without subscribers: the cluster's interest does not stop it.
        try await loop.run { try (storeB.value as! JetStreamStore).setFollowing(false, subject: "shared.positions") }
        let after = change("k0", "after")
        _ = try await logA.append(after, on: loop).get()
        await loop.callback { done in
            if logB.value.latestPerKey.contains(where: { $0.value == after }) { return done(()) }
            logB.value.onCommit = { entry in if entry.value == after { done(()) } }
        }
        #expect(try await rows(logB, on: loop)["k0"] == after)
        _ = try? await loop.run { storeA.value.close(); storeB.value.close() }
    }

    @Test("a table subject on JetStream: its snapshot is the live keys, and a since of its epoch resumes the changes over the compacted changelog's gaps, recovered", .timeLimit(.minutes(1)))
    func tableSubjectResumesOverTheGaps() async throws {
        let nats = try await NATSServerProcess(jetStream: true)
        defer { nats.stop() }
        let loop = TestLoop()
        let (connection, store) = try store(nats, name: "a", loop: loop)
        defer { connection.close() }
        let hub = try await loop.run { () -> Confined<Hub> in
            let hub = Hub(configuration: .init(autoCreate: false), scheduler: ImmediateScheduler.shared, historyStore: store.value)
            try hub.declareSubject("positions", history: HistoryRetention(size: 100), table: SubjectTable.Limits())
            return Confined(hub)
        }
        // a (1), b (2), a again (3), c (4), b deleted (5): the stream keeps 3, 4 and 5.
        for value in [change("a", 1), change("b", 2), change("a", 3), change("c", 4), change("b", .null)] {
            let stored: Result<UInt64?, HubError> = await loop.callback { done in
                do throws(HubError) {
                    try hub.value.subject(named: "positions").send(value, whenStored: { done($0) })
                } catch {
                    done(.failure(error))
                }
            }
            _ = try stored.get()
        }
        /// The first `count` entries of a subscription from `since`, and whether it was recovered.
        func subscribe(since: HistorySince?, count: Int) async -> (recovered: Bool?, entries: [HistoryEntry]) {
            await loop.callback { done in
                var recovered: Bool?
                var entries: [HistoryEntry] = []
                var cancellable: AnyCancellable?
                do throws(HubError) {
                    let subject = try hub.value.subject(named: "positions")
                    cancellable = try hub.value.historyPublisher(for: subject, since: since, onStart: { _, flag in recovered = flag })
                        .sink(receiveCompletion: { _ in }, receiveValue: { entry in
                            entries.append(entry)
                            if entries.count == count {
                                cancellable?.cancel()
                                done((recovered, entries))
                            }
                        })
                } catch {
                    done((nil, []))
                }
            }
        }
        let snapshot = await subscribe(since: nil, count: 2)
        #expect(snapshot.entries == [HistoryEntry(offset: 3, value: change("a", 3)), HistoryEntry(offset: 4, value: change("c", 4))])
        let epoch = try await loop.run { try hub.value.subject(named: "positions").history!.epoch }
        let resumed = await subscribe(since: .offset(1, epoch: epoch), count: 3)
        #expect(resumed.recovered == true)
        #expect(resumed.entries.map(\.offset) == [3, 4, 5])
        #expect(resumed.entries.last?.value == change("b", .null))
        // Another epoch's offset is not this changelog's: the snapshot again.
        let other = await subscribe(since: .offset(1, epoch: "0000000000000000"), count: 2)
        #expect(other.recovered == false)
        #expect(other.entries.map(\.offset) == [3, 4])
        _ = try? await loop.run { store.value.close() }
    }
}
