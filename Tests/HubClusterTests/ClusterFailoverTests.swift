import Foundation
import HubClient
import HubValue
import NetworkTestSupport
import Testing

/// `HubClient` with the URLs of several nodes: it connects to one that answers and moves
/// to another when its node dies.
@Suite("Client failover across cluster nodes", .serialized)
struct ClusterFailoverTests {
    @Test func aClientMovesToAnotherNodeWhenItsNodeDies() async throws {
        let nats = try await NATSServerProcess()
        let a = try await NodeProcess(name: "a", natsURL: nats.url)
        let b = try await NodeProcess(name: "b", natsURL: nats.url)
        let c = try await NodeProcess(name: "c", natsURL: nats.url)
        let deadPort = try NATSServerProcess.freePort()
        // The first URL answers nothing: the first connection goes on to a.
        let client = try HubClient(
            urls: ["ws://127.0.0.1:\(deadPort)/", "ws://127.0.0.1:\(a.port)/", "ws://127.0.0.1:\(b.port)/"],
            configuration: HubClient.Configuration(
                connectTimeout: .seconds(5), requestTimeout: .seconds(10),
                reconnect: ReconnectPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200))))
        try await client.connect()
        #expect(await client.connectCount == 1)

        let watcher = try await c.client()
        let onC = record("orders", on: watcher)
        try await waitUntil("a to see c's subscriber") { try await subscribers(of: "orders", via: client) == 1 }
        try await client.send(1, to: "orders")
        #expect(try await onC.values(1) == [1])

        // a dies: the client reconnects to b (the next URL) and goes on.
        kill(a.process.processIdentifier, SIGKILL)
        try await waitUntil("the client to reconnect to another node") { await client.connectCount == 2 }
        try await waitUntil("the client's node to see c's subscriber") { try await subscribers(of: "orders", via: client) == 1 }
        try await client.send(2, to: "orders")
        #expect(try await onC.values(1) == [2])
        await client.close()

        // hubcli's client commands take the same list: the dead port, then b.
        let send = try await HubCLIExecutable.run(
            ["send", "orders", "3", "--url", "ws://127.0.0.1:\(deadPort)/,ws://127.0.0.1:\(b.port)/"])
        let output = send.errors
        #expect(send.status == 0, "\(output)")
        #expect(try await onC.values(1) == [3])
        await watcher.close()
    }
}
