import Foundation
import HubValue
import HubServer
import HubTransport
import NetworkTestSupport
import Testing

/// A broker on several event loops (``HubService/Configuration/eventLoops``): the hub's
/// loop accepts and hands the sockets to the loops in turn; connections on the other
/// loops reach their sessions on the hub's loop. Real services, real sockets.
@Suite("Server event loops", .serialized)
struct ServerEventLoopsTests {
    static func configuration(loops: Int, session: SessionConfiguration = SessionConfiguration()) -> HubService.Configuration {
        var configuration = serviceConfiguration(session: session)
        configuration.eventLoops = loops
        return configuration
    }

    /// Opens `count` connections one after the other (each is accepted before the next).
    static func connect(_ count: Int, to server: HubServerHarness) async throws -> [TestClient] {
        var clients: [TestClient] = []
        for _ in 0..<count { clients.append(try await server.connect()) }
        return clients
    }

    @Test func connectionsGoToTheLoopsInTurnAndShareOneHubWithDemandHonoured() async throws {
        try await withServer(Self.configuration(loops: 3)) { server in
            let clients = try await Self.connect(6, to: server)
            let statistics = try await server.eventuallyStatistics { $0.sessions == 6 }
            #expect(statistics.loopSessions == [2, 2, 2])
            #expect(statistics.connections == 6)
            for client in clients {
                try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "demand": 3]))
                #expect(try await client.next()["op"] == "subscribed")
            }
            // Published on one loop, delivered on every loop, never beyond the demand.
            try await clients[1].send((1...10).map { json(["op": "send", "to": "s", "value": .int(Int64($0))]) })
            for client in clients {
                #expect(try await client.values(3, id: 1) == [1, 2, 3])
                await client.expectNothing()
            }
            // More demand on two loops: the same values, as many as requested.
            for client in clients[1...2] {
                try await client.send(json(["op": "request", "id": 1, "n": 2]))
            }
            let more = try await clients[1].values(2, id: 1)
            #expect(try await clients[2].values(2, id: 1) == more)
            for client in clients { await client.expectNothing() }
        }
    }

    @Test func batchSubscribersOnEveryLoopGetEachValueOnceInOrder() async throws {
        try await withServer(Self.configuration(loops: 2)) { server in
            let clients = try await Self.connect(4, to: server)
            for client in clients {
                try await client.send(json(["op": "subscribe", "id": 7, "to": "b", "batch": true, "demand": "unlimited"]))
                #expect(try await client.next()["op"] == "subscribed")
            }
            let values = (1...200).map { Value.int(Int64($0)) }
            try await server.withHub { hub in
                guard case .subject(let subject)? = hub.entry(named: "b") else { return }
                for value in values { hub.publish(value, to: subject) }
            }
            for client in clients {
                #expect(try await client.values(200, id: 7) == values)
                await client.expectNothing()
            }
        }
    }

    @Test func aCancelOrACloseOnAConnectionLoopEndsItsSubscriptionsOnTheHub() async throws {
        try await withServer(Self.configuration(loops: 2)) { server in
            // The first socket goes to the hub's loop, the second to the connection loop.
            let (local, relayed) = (try await server.connect(), try await server.connect())
            for client in [relayed, local] {
                try await client.send(json(["op": "subscribe", "id": 1, "to": "c"]), json(["op": "subscribe", "id": 2, "to": "d"]))
                #expect(try await client.next(2).map { $0["op"] } == ["subscribed", "subscribed"])
            }
            #expect(try await server.subscribers(of: "c") == 2)
            try await relayed.send(json(["op": "cancel", "id": 1]))
            #expect(try await server.eventually { ($0.entry(named: "c")?.subscriberCount ?? 0) == 1 })
            try await relayed.close()
            #expect(try await relayed.expectClose().code == 1000)
            #expect(try await server.eventually { ($0.entry(named: "d")?.subscriberCount ?? 0) == 1 })
            let statistics = try await server.eventuallyStatistics { $0.sessions == 1 }
            #expect(statistics.loopSessions == [1, 0])
            #expect(statistics.connections == 1)
        }
    }

    @Test func httpRequestsAreAnsweredWhicheverLoopTheirSocketGoesTo() async throws {
        try await withServer(Self.configuration(loops: 3)) { server in
            // Three requests in a row: one on each loop.
            for _ in 0..<3 {
                let health = try await HTTPTestClient.request(port: server.port, path: "/health")
                #expect(health.status == 200)
                #expect(health.text == "ok\n")
            }
            for _ in 0..<3 {
                let metrics = try await HTTPTestClient.request(port: server.port, path: "/metrics")
                #expect(metrics.status == 200)
                #expect(metrics.text.contains("hub_connections"))
            }
            // With one WebSocket client on the hub's loop (the seventh socket).
            let client = try await server.connect()
            _ = try await server.eventuallyStatistics { $0.sessions == 1 }
            let samples = try await ServerMetricsTests.scrape(server.port).samples
            #expect(samples[#"hub_event_loop_sessions{loop="0"}"#] == 1)
            #expect(samples[#"hub_event_loop_sessions{loop="1"}"#] == 0)
            #expect(samples[#"hub_event_loop_sessions{loop="2"}"#] == 0)
            for loop in 1...2 {
                let lag = try #require(samples[#"hub_connection_loop_lag_max_seconds{loop="\#(loop)"}"#])
                #expect(lag >= 0 && lag < 60)
            }
            await client.expectNothing()
        }
    }

    @Test func maxConnectionsHoldsOverEveryLoop() async throws {
        var configuration = Self.configuration(loops: 3)
        configuration.maxConnections = 2
        try await withServer(configuration) { server in
            let admitted = try await Self.connect(2, to: server)
            // The third, on a connection loop, and a fourth, on the hub's loop: closed
            // with 4429 before anything is sent.
            for _ in 0..<2 {
                let refused = try await server.connect(welcome: false)
                let (code, messages) = try await refused.expectClose()
                #expect(code == 4429)
                #expect(messages.isEmpty)
            }
            for client in admitted { await client.expectNothing() }
        }
    }

    @Test func aSlowConsumerOnAConnectionLoopIsClosedWith4008AndTheOthersAreServed() async throws {
        let configuration = Self.configuration(loops: 2, session: SessionConfiguration(maxQueuedBytes: 256 << 10))
        try await withServer(configuration) { server in
            let fast = try await server.connect()  // on the hub's loop
            let slow = try await server.connect()  // on the connection loop
            #expect(try await SlowConsumerTests.overwhelm(slow, on: server))
            try await slow.withConnection { $0.resumeReading() }
            #expect(try await slow.expectClose(timeout: .seconds(20)).code == 4008)
            try await fast.send(json(["op": "subscribe", "id": 1, "to": "firehose", "demand": 1]))
            #expect(try await fast.next()["op"] == "subscribed")
            try await server.withHub { hub in
                guard case .subject(let subject)? = hub.entry(named: "firehose") else { return }
                hub.publish(.string("after"), to: subject)
            }
            #expect(try await fast.values(1, id: 1) == ["after"])
        }
    }

    @Test func shutdownEndsRelayedSubscriptionsWithShuttingDownThenCloses1001() async throws {
        try await withServer(Self.configuration(loops: 2)) { server in
            let local = try await server.connect()
            let relayed = try await server.connect()
            try await relayed.send(json(["op": "subscribe", "id": 4, "to": "a"]))
            #expect(try await relayed.next()["op"] == "subscribed")
            await server.service.shutdown()
            let (code, messages) = try await relayed.expectClose(timeout: .seconds(5))
            #expect(code == 1001)
            #expect(messages.map { $0["code"] } == ["shutting_down"])
            #expect(try await local.expectClose(timeout: .seconds(5)).code == 1001)
        }
    }

    @Test func aDrainClosesTheConnectionsOfEveryLoopWith1012() async throws {
        try await withServer(Self.configuration(loops: 2)) { server in
            let clients = try await Self.connect(4, to: server)
            await server.service.drain(grace: .milliseconds(100))
            // The server closes with 1012; libwebsockets 4.1 clients, as this test's,
            // report 1012 as a protocol error (1002).
            for client in clients {
                #expect(try await client.expectClose(timeout: .seconds(10)).code == 1002)
            }
            #expect(try await HTTPTestClient.request(port: server.port, path: "/ready").status == 503)
        }
    }
    /// What `hubcli serve` does: `start(setUp:)`, then a `ServiceGroup` runs the service,
    /// whose `run()` starts it again. The second start changes nothing: one server a loop,
    /// and the handed-over connections stay the connection loop's, one after the other.
    @Test func aSecondStartRunsNothingAgain() async throws {
        var configuration = Self.configuration(loops: 2)
        // Two sockets may wait per loop: a forgotten one would soon displace the rest.
        configuration.maxPendingHandshakes = 4
        let setUps = Counter()
        try await withServer(configuration, setUp: { _ in setUps.increment() }) { server in
            let again = try await server.service.start { _ in setUps.increment() }
            #expect(again == server.port)
            #expect(setUps.value == 1)
            for round in 0..<40 {
                let client = try await server.connect()
                try await client.send(json(["op": "send", "to": "s", "value": .int(Int64(round)), "ack": 1]))
                #expect(try await client.next()["op"] == "ack")
                try await client.close()
            }
            let statistics = try await server.eventuallyStatistics { $0.sessions == 0 }
            #expect(statistics.connections == 0)
            // Both loops still accept: a new pair lands one on each.
            _ = try await Self.connect(2, to: server)
            #expect(try await server.eventuallyStatistics { $0.sessions == 2 }.loopSessions == [1, 1])
        }
    }
}

/// A count shared with a service's set-up closure.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment() { lock.withLock { count += 1 } }

    var value: Int { lock.withLock { count } }
}
