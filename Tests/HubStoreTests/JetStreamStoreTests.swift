import Foundation
import HubCluster
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
}
