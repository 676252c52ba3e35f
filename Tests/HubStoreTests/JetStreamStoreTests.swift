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

    @Test("a table subject is refused on JetStream, whose logs keep no table yet, rather than losing its keys at a restart")
    func tablesAreRefused() async throws {
        let nats = try await NATSServerProcess(jetStream: true)
        defer { nats.stop() }
        let loop = TestLoop()
        let (connection, store) = try store(nats, name: "a", loop: loop)
        defer { connection.close() }
        let refusal = try await loop.run { () -> String? in
            let hub = Hub(configuration: .init(autoCreate: false), scheduler: ImmediateScheduler.shared, historyStore: store.value)
            do throws(HubError) {
                try hub.declareSubject("positions", table: SubjectTable.Limits())
                return nil
            } catch {
                return error.message
            }
        }
        #expect(refusal?.contains("does not keep tables yet") == true, "\(refusal ?? "accepted")")
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
