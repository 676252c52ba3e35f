import Foundation
import HubClient
import HubValue
import NetworkTestSupport
import Testing

/// A running pipeline (`run: true`) with `into` runs on one node of the cluster: the holder
/// of its lease in JetStream; when that node dies another takes over.
@Suite("Running pipelines placed by a lease", .serialized)
struct ClusterPipelineLeaseTests {
    @Test func oneNodeRunsTheIntoPipelineAndAnotherTakesOverWhenItDies() async throws {
        let config = "pipelines:\n  tally:\n    source: \"ticks | map(. * 10) | into(out)\"\n    run: true\n"
        let cluster = try await ClusterProcessTests.Cluster(config: config, jetStream: true)
        let clients = [try await cluster.nodes[0].client(), try await cluster.nodes[1].client(), try await cluster.nodes[2].client()]

        // The pipeline subscribes to ticks where it runs: one subscriber in the whole cluster.
        func holder() async throws -> Int? {
            let subscriptions = try await cluster.nats.subscriptions()
            let holders = cluster.nodes.indices.filter { subscriptions[cluster.nodes[$0].name]?.contains("hub.v.ticks") == true }
            return holders.count == 1 ? holders[0] : nil
        }
        var running: Int?
        try await waitUntil("one node to run the pipeline") {
            running = try await holder()
            return running != nil
        }
        try await waitUntil("the cluster to count one subscriber of ticks") {
            try await subscribers(of: "ticks", via: clients[0]) == 1
        }
        let first = try #require(running)
        let others = cluster.nodes.indices.filter { $0 != first }
        let (sender, watcher) = (clients[others[0]], clients[others[1]])
        let onWatcher = record("out", on: watcher)
        try await waitUntil("the watcher's subscriber to be known") { try await subscribers(of: "out", via: clients[first]) == 1 }

        for value in 1...3 { try await sender.send(.int(Int64(value)), to: "ticks") }
        #expect(try await onWatcher.values(3) == [10, 20, 30])

        // The holder dies: within three renewals another node runs it.
        kill(cluster.nodes[first].process.processIdentifier, SIGKILL)
        var next: Int?
        try await waitUntil("another node to run the pipeline", timeout: .seconds(15)) {
            next = try await holder()
            return next != nil && next != first
        }
        try await waitUntil("the sender to count its subscriber of ticks again") {
            try await subscribers(of: "ticks", via: sender) == 1
        }
        try await waitUntil("the new holder to know the watcher's subscriber") {
            try await subscribers(of: "out", via: clients[try #require(next)]) == 1
        }
        try await sender.send(4, to: "ticks")
        // Exactly once: 40, and no repeat of anything before it.
        #expect(try await onWatcher.values(1) == [40])
        try await sender.send(5, to: "ticks")
        #expect(try await onWatcher.values(1) == [50])
        for (index, client) in clients.enumerated() where index != first { await client.close() }
    }
}
