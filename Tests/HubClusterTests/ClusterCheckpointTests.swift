import Foundation
import HubClient
import HubValue
import NetworkTestSupport
import Testing

/// A running pipeline over a durable subject in a cluster checkpoints into JetStream: the
/// node that takes it over when its holder dies resumes from its checkpoint, so that a
/// subscriber of its view never sees the view go back (before, the new holder replayed the
/// subject's whole history: `6 1 3 6 16`).
@Suite("Running pipelines resume from their checkpoints on another node", .serialized)
struct ClusterCheckpointTests {
    /// The node whose log says it holds the lease of `pipeline` now (the last one to say so
    /// among those still running), if exactly one does.
    static func holder(of pipeline: String, in cluster: ClusterProcessTests.Cluster) -> Int? {
        let holders = cluster.nodes.indices.filter { index in
            let node = cluster.nodes[index]
            guard node.process.isRunning else { return false }
            let log = node.stderr
            guard let placed = log.range(of: "running pipeline placed here", options: .backwards) else { return false }
            guard let lost = log.range(of: "running pipeline's lease lost", options: .backwards) else { return true }
            return lost.lowerBound < placed.lowerBound
        }
        return holders.count == 1 ? holders[0] : nil
    }

    @Test func theNodeThatTakesARunningSumOverResumesItsCheckpoint() async throws {
        let storage = FileManager.default.temporaryDirectory.appendingPathComponent("cluster-ckpt-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: storage) }
        let config = """
            storage: {path: "\(storage)"}
            subjects:
              nums: {durable: true, history: {size: 1000}}
              total: {durable: true, initial: 0}
            pipelines:
              summer:
                run: true
                source: "nums | scan(0, $acc + .) | into(total)"
            """
        let cluster = try await ClusterProcessTests.Cluster(config: config, jetStream: true)
        var running: Int?
        try await waitUntil("one node to run the pipeline") {
            running = Self.holder(of: "summer", in: cluster)
            return running != nil
        }
        let first = try #require(running)
        let others = cluster.nodes.indices.filter { $0 != first }
        let sender = try await cluster.nodes[others[0]].client()
        let watcher = try await cluster.nodes[others[1]].client()
        let onWatcher = record("total", on: watcher)
        #expect(try await onWatcher.values(1) == [0])

        for value in 1...3 { try await sender.send(.int(Int64(value)), to: "nums") }
        #expect(try await onWatcher.values(3) == [1, 3, 6])

        // The holder dies: another node takes the pipeline over from its checkpoint.
        kill(cluster.nodes[first].process.processIdentifier, SIGKILL)
        var next: Int?
        try await waitUntil("another node to run the pipeline", timeout: .seconds(20)) {
            next = Self.holder(of: "summer", in: cluster)
            return next != nil && next != first
        }
        let resumed = try #require(next)
        try await waitUntil("the new holder to resume its checkpoint") {
            cluster.nodes[resumed].stderr.contains("running pipeline resumes from its checkpoint")
        }
        try await sender.send(10, to: "nums")
        // The view goes on from 6: nothing replayed, nothing written twice.
        #expect(try await onWatcher.values(1) == [16])
        try await sender.send(20, to: "nums")
        #expect(try await onWatcher.values(1) == [36])
        await sender.close()
        await watcher.close()
    }

    @Test func aGroupedSumIntoATableIsExactlyOnceAcrossAKillAndEveryNodeHasTheTable() async throws {
        let storage = FileManager.default.temporaryDirectory.appendingPathComponent("cluster-table-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: storage) }
        let config = """
            storage: {path: "\(storage)"}
            subjects:
              trades: {durable: true, history: {size: 1000}}
              positions: {durable: true, kind: table}
            pipelines:
              positioner:
                run: true
                source: "trades | groupBy(.symbol, scan(0, $acc + .qty)) | into(positions)"
            """
        let cluster = try await ClusterProcessTests.Cluster(config: config, jetStream: true)
        var running: Int?
        try await waitUntil("one node to run the pipeline") {
            running = Self.holder(of: "positioner", in: cluster)
            return running != nil
        }
        let first = try #require(running)
        let others = cluster.nodes.indices.filter { $0 != first }
        let sender = try await cluster.nodes[others[0]].client()
        let watcher = try await cluster.nodes[others[1]].client()
        func trade(_ symbol: String, _ qty: Int64) -> Value { ["symbol": .string(symbol), "qty": .int(qty)] }
        func change(_ key: String, _ value: Int64) -> Value { ["key": .string(key), "value": .int(value)] }

        for value in [trade("AAPL", 1), trade("MSFT", 2), trade("AAPL", 3)] { try await sender.send(value, to: "trades") }
        // Another node than the writer's has the table: get, and a subscriber's snapshot.
        try await waitUntil("the watcher's node to have the positions") {
            try await watcher.get("AAPL", from: "positions") == 4
        }
        #expect(try await watcher.get("MSFT", from: "positions") == 2)
        let onWatcher = record("positions", on: watcher)
        #expect(try await onWatcher.values(2) == [change("MSFT", 2), change("AAPL", 4)])

        // The holder dies: another node takes the pipeline over from its checkpoint.
        kill(cluster.nodes[first].process.processIdentifier, SIGKILL)
        var next: Int?
        try await waitUntil("another node to run the pipeline", timeout: .seconds(20)) {
            next = Self.holder(of: "positioner", in: cluster)
            return next != nil && next != first
        }
        let resumed = try #require(next)
        try await waitUntil("the new holder to resume its checkpoint") {
            cluster.nodes[resumed].stderr.contains("running pipeline resumes from its checkpoint")
        }
        try await sender.send(trade("AAPL", 10), to: "trades")
        // The sums go on: nothing replayed, nothing written twice.
        #expect(try await onWatcher.values(1) == [change("AAPL", 14)])
        try await sender.send(trade("MSFT", 20), to: "trades")
        #expect(try await onWatcher.values(1) == [change("MSFT", 22)])

        // A node started now (a broker restarted) reads the whole table from its stream.
        let late = try await NodeProcess(name: "d", natsURL: cluster.nats.url, extraArguments: cluster.arguments)
        try await waitUntil("node d ready") { try await late.ready().status == 200 }
        let onLate = try await late.client()
        #expect(try await onLate.get("AAPL", from: "positions") == 14)
        #expect(try await onLate.get("MSFT", from: "positions") == 22)
        #expect(try await onLate.get("GOOG", from: "positions") == nil)
        await onLate.close()
        await sender.close()
        await watcher.close()
    }
}
