import HubRegistry
import HubServer
import HubTransport
import Testing

/// Close codes (PROTOCOL.md §7) and what a closed connection leaves behind.
@Suite("HubServer close codes")
struct ServerCloseTests {
    @Test func aClientCloseIsEchoedAndCancelsItsSubscriptions() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(
                json(["op": "subscribe", "id": 1, "to": "a", "demand": "unlimited"]),
                json(["op": "subscribe", "id": 2, "to": "b"]))
            #expect(try await client.next(2).map { $0["op"] } == ["subscribed", "subscribed"])
            #expect(await server.service.statistics.subscriptions == 2)
            try await client.close(code: 1000)
            #expect(try await client.expectClose().code == 1000)
            #expect(try await server.eventually { hub in
                hub.entry(named: "a").map(subscriberCount) == 0 && hub.entry(named: "b").map(subscriberCount) == 0
            })
            let statistics = try await server.eventuallyStatistics { $0.connections == 0 && $0.sessions == 0 }
            #expect(statistics.connections == 0)
            #expect(statistics.sessions == 0)
            #expect(statistics.subscriptions == 0)
        }
    }

    @Test func shutdownEndsEachLiveSubscriptionWithShuttingDownThenCloses1001() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(
                json(["op": "subscribe", "id": 2, "to": "a"]),
                json(["op": "subscribe", "id": 1, "pipeline": "timer(10ms)", "demand": 0]),
                json(["op": "subscribe", "id": 3, "pipeline": "sequence([1])", "demand": 1]))
            #expect(try await client.next(5).map { $0["op"] } == ["subscribed", "subscribed", "subscribed", "next", "complete"])
            await server.service.shutdown()
            let (code, messages) = try await client.expectClose(timeout: .seconds(5))
            #expect(code == 1001)
            #expect(messages.map { $0["id"] } == [1, 2])
            #expect(messages.allSatisfy { $0["op"] == "error" && $0["code"] == "shutting_down" })
        }
    }

    @Test func aMessageAtTheLimitIsAcceptedAndOneByteMoreIs1009() async throws {
        let limit = 64 << 10
        try await withServer(serviceConfiguration(maxMessageSize: limit)) { server in
            let client = try await server.connect()
            func message(size: Int) -> String {
                let head = #"{"op":"send","to":"s","ack":1,"value":""#
                let tail = #""}"#
                return head + String(repeating: "x", count: size - head.utf8.count - tail.utf8.count) + tail
            }
            try await client.send(message(size: limit))
            #expect(try await client.next() == ["op": "ack", "ack": 1])
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "demand": "unlimited"]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send(message(size: limit + 1))
            #expect(try await client.expectClose().code == 1009)
            #expect(try await server.eventually { hub in hub.entry(named: "s").map(subscriberCount) == 0 })
            #expect(try await server.eventuallyStatistics { $0.sessions == 0 }.sessions == 0)
        }
    }

    @Test func theDefaultLimitAcceptsOneMebibyte() async throws {
        try await withServer { server in
            let client = try await server.connect()
            let head = #"{"op":"send","to":"s","ack":1,"value":""#
            let tail = #""}"#
            let filler = (1 << 20) - head.utf8.count - tail.utf8.count
            try await client.send(head + String(repeating: "y", count: filler) + tail)
            #expect(try await client.next() == ["op": "ack", "ack": 1])
            try await client.send(head + String(repeating: "y", count: filler + 1) + tail)
            #expect(try await client.expectClose().code == 1009)
        }
    }

    @Test func connectionsBeyondTheMaximumAreClosedWith4429() async throws {
        try await withServer(serviceConfiguration(maxConnections: 2)) { server in
            let first = try await server.connect()
            _ = try await server.connect()
            let third = try await server.connect(welcome: false)
            try await third.expectOpen()
            let refused = try await third.expectClose()
            #expect(refused.code == 4429)
            #expect(refused.skipped.isEmpty)
            // A slot freed is a slot available again.
            try await first.close()
            #expect(try await first.expectClose().code == 1000)
            _ = try await server.eventuallyStatistics { $0.connections == 1 }
            let fourth = try await server.connect()
            #expect(fourth.welcome["op"] == "welcome")
        }
    }

    @Test func shutdownWithLiveSubscribersIsPromptAndEveryClientSees1001() async throws {
        let server = try await HubServerHarness()
        var clients: [TestClient] = []
        for index in 0..<5 {
            let client = try await server.connect()
            try await client.send(
                json(["op": "subscribe", "id": 1, "to": "news", "demand": "unlimited"]),
                json(["op": "subscribe", "id": 2, "pipeline": "timer(10ms)", "demand": "unlimited"]))
            #expect(try await client.next(2).map { $0["op"] } == ["subscribed", "subscribed"], "client \(index)")
            clients.append(client)
        }
        try await server.withHub { hub in try hub.send("breaking", to: "news") }
        let clock = ContinuousClock()
        let start = clock.now
        await server.service.shutdown()
        let elapsed = start.duration(to: clock.now)
        #expect(elapsed < .seconds(5), "shutdown took \(elapsed)")  // a hang guard, not a speed test
        for client in clients {
            #expect(try await client.expectClose(timeout: .seconds(5)).code == 1001)
        }
        server.clientLoop.shutdown()
    }

    @Test func aClientThatDropsMidStreamIsCancelledUpstream() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(
                json(["op": "subscribe", "id": 1, "to": "hot", "demand": "unlimited"]),
                json(["op": "subscribe", "id": 2, "pipeline": "merge(timer(10ms), subject(tick_side))", "demand": "unlimited"]),
                json(["op": "subscribe", "id": 3, "pipeline": "zip(sequence([1, 2, 3, 4, 5, 6, 7, 8]), subject(seq_side))", "demand": 1]))
            #expect(try await client.next(3).map { $0["op"] } == ["subscribed", "subscribed", "subscribed"])
            // The timer is producing.
            _ = try await client.nextEvent()
            #expect(try await server.subscribers(of: "hot") == 1)
            #expect(try await server.subscribers(of: "tick_side") == 1)
            #expect(try await server.subscribers(of: "seq_side") == 1)
            try await client.abort()
            #expect(try await server.eventually { hub in
                ["hot", "tick_side", "seq_side"].allSatisfy { hub.entry(named: $0).map(subscriberCount) == 0 }
            })
            let statistics = try await server.eventuallyStatistics { $0.sessions == 0 }
            #expect(statistics.sessions == 0)
            #expect(statistics.subscriptions == 0)
            #expect(statistics.connections == 0)
        }
    }
}

/// The subscriber count of a hub entry.
func subscriberCount(_ entry: Hub.Entry) -> Int { entry.subscriberCount }
