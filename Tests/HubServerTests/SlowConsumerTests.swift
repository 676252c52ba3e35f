import HubValue
import HubServer
import HubTransport
import Testing

/// Rule 8 of PROTOCOL.md §5: a client that stops reading is closed with 4008,
/// its subscriptions are cancelled and the server's memory for it stays bounded.
@Suite("HubServer slow consumer", .serialized)
struct SlowConsumerTests {
    static let maxQueued = 256 << 10

    static func configuration(closeTimeout: Duration) -> HubService.Configuration {
        serviceConfiguration(session: SessionConfiguration(maxQueuedBytes: maxQueued, closeTimeout: closeTimeout))
    }

    /// Subscribes `client` to `firehose` and `quiet`, pauses its reading and publishes
    /// 4 KiB values until the server gives up on it (bounded: at most 64 MiB).
    static func overwhelm(_ client: TestClient, on server: HubServerHarness) async throws -> Bool {
        try await client.send(
            json(["op": "subscribe", "id": 1, "to": "firehose", "demand": "unlimited"]),
            json(["op": "subscribe", "id": 2, "to": "quiet", "demand": 1]))
        #expect(try await client.next(2).map { $0["op"] } == ["subscribed", "subscribed"])
        try await client.withConnection { $0.pauseReading() }
        var full = false
        for _ in 0..<1024 {
            let done = try await server.withHub { hub in
                let value = Value.string(String(repeating: "z", count: 4096))
                for _ in 0..<16 {
                    guard case .subject(let subject) = hub.entry(named: "firehose"), subject.subscriberCount > 0 else {
                        return true
                    }
                    hub.publish(value, to: subject)
                }
                return false
            }
            if done { return true }
            // Let the loop hand what it can to the socket, so that the limit is crossed
            // only once the socket stops taking bytes (the client's buffers are full).
            if !full {
                let left = try await server.eventuallyStatistics(timeout: .milliseconds(200)) { $0.queuedBytes == 0 }.queuedBytes
                if left > 0 {
                    // Nothing drained for another 200 ms either: the socket is full.
                    let later = try await server.eventuallyStatistics(timeout: .milliseconds(200)) { $0.queuedBytes < left }
                    full = later.queuedBytes >= left
                }
            }
        }
        return false
    }

    @Test func aClientThatStopsReadingIsClosedWith4008WhenItResumes() async throws {
        // The close timeout only has to outlast the test's steps before the client reads
        // again, which take seconds on a loaded machine.
        try await withServer(Self.configuration(closeTimeout: .seconds(60))) { server in
            let client = try await server.connect()
            #expect(try await Self.overwhelm(client, on: server))
            // Every subscription is cancelled upstream at once.
            #expect(try await server.subscribers(of: "firehose") == 0)
            #expect(try await server.subscribers(of: "quiet") == 0)
            // What the server holds for the connection is bounded, and stays so.
            let statistics = await server.service.statistics
            #expect(statistics.queuedBytes <= Self.maxQueued + (64 << 10), "\(statistics)")
            #expect(statistics.subscriptions == 0)
            try await server.withHub { hub in
                for _ in 0..<100 { try hub.send(.string(String(repeating: "w", count: 4096)), to: "firehose") }
            }
            #expect(await server.service.statistics.queuedBytes <= Self.maxQueued + (64 << 10))
            // What the client still sends while its connection is closing is ignored (checked
            // below, once the close handshake is over: by then the server has read it).
            try await client.send(json(["op": "send", "to": "afterwards", "value": 1, "ack": 1]))
            #expect(await server.service.statistics.connections == 1)
            // The TCP connection is kept: a client that resumes reading gets the close frame.
            try await client.withConnection { $0.resumeReading() }
            let close = try await client.expectClose(timeout: .seconds(30))
            #expect(close.code == 4008)
            #expect(close.skipped.allSatisfy { $0["op"] == "next" && $0["id"] == 1 })
            let after = try await server.eventuallyStatistics { $0.connections == 0 }
            #expect(after.connections == 0)
            // The message sent before the client answered the close was read before the close
            // completed, and ignored.
            #expect(try await server.withHub { $0.entry(named: "afterwards") == nil })
        }
    }

    @Test func aClientThatNeverResumesIsDroppedAfterTheCloseTimeout() async throws {
        try await withServer(Self.configuration(closeTimeout: .milliseconds(400))) { server in
            let client = try await server.connect()
            #expect(try await Self.overwhelm(client, on: server))
            let clock = ContinuousClock()
            let decided = clock.now
            #expect(await server.service.statistics.connections == 1)
            let after = try await server.eventuallyStatistics(timeout: .seconds(5)) { $0.connections == 0 }
            #expect(after.connections == 0, "the connection is still held: \(after)")
            #expect(decided.duration(to: clock.now) >= .milliseconds(300))
            #expect(after.queuedBytes == 0)
        }
    }

    @Test func shutdownIsPromptWithAClientThatStoppedReading() async throws {
        let server = try await HubServerHarness(serviceConfiguration())
        let stuck = try await server.connect()
        let live = try await server.connect()
        try await stuck.send(json(["op": "subscribe", "id": 1, "to": "flood", "demand": "unlimited"]))
        #expect(try await stuck.next()["op"] == "subscribed")
        try await live.send(json(["op": "subscribe", "id": 1, "to": "flood", "demand": 1]))
        #expect(try await live.next()["op"] == "subscribed")
        try await stuck.withConnection { $0.pauseReading() }
        // Fill the stuck client's socket buffers (bounded: 16 MiB).
        for _ in 0..<256 {
            try await server.withHub { hub in
                for _ in 0..<16 { try hub.send(.string(String(repeating: "f", count: 4096)), to: "flood") }
            }
            let statistics = try await server.eventuallyStatistics(timeout: .milliseconds(200)) { $0.queuedBytes == 0 }
            if statistics.queuedBytes > 0 { break }
        }
        #expect(await server.service.statistics.queuedBytes > 0)
        let clock = ContinuousClock()
        let start = clock.now
        await server.service.shutdown(grace: .milliseconds(500))
        let elapsed = start.duration(to: clock.now)
        #expect(elapsed < .seconds(5), "shutdown took \(elapsed)")  // a hang guard, not a speed test
        #expect(try await live.expectClose().code == 1001)
        server.clientLoop.shutdown()
    }

    /// The limit is crossed in the middle of a subject's fan-out: the slow connection's
    /// subscriptions are cancelled while the subject is sending, and the other
    /// connections still get the value. On the hub's loop only: there 500 KB queued in one
    /// pass are all held at once; a connection loop writes them while the pass goes on,
    /// and a client that reads them that fast is not slow (`ServerEventLoopsTests` has a
    /// slow consumer on a connection loop).
    @Test func crossingTheLimitDuringAFanOutLeavesOtherSubscribersServed() async throws {
        try await withServer(
            serviceConfiguration(session: SessionConfiguration(maxQueuedBytes: 64 << 10)), onTheHubLoopOnly: true
        ) { server in
            let before = try await server.connect()
            try await before.send(json(["op": "subscribe", "id": 1, "to": "fan", "demand": "unlimited"]))
            #expect(try await before.next()["op"] == "subscribed")
            let greedy = try await server.connect()
            try await greedy.send((1...500).map { json(["op": "subscribe", "id": .int(Int64($0)), "to": "fan", "demand": "unlimited"]) })
            #expect(try await greedy.next(500).allSatisfy { $0["op"] == "subscribed" })
            let after = try await server.connect()
            try await after.send(json(["op": "subscribe", "id": 7, "to": "fan", "demand": "unlimited"]))
            #expect(try await after.next()["op"] == "subscribed")
            #expect(try await server.subscribers(of: "fan") == 502)
            let value = Value.string(String(repeating: "v", count: 1024))
            try await server.withHub { hub in try hub.send(value, to: "fan") }
            #expect(try await before.values(1, id: 1) == [value])
            #expect(try await after.values(1, id: 7) == [value])
            let close = try await greedy.expectClose()
            #expect(close.code == 4008)
            #expect(try await server.subscribers(of: "fan") == 2)
            try await server.withHub { hub in try hub.send("next", to: "fan") }
            #expect(try await before.values(1, id: 1) == ["next"])
            #expect(try await after.values(1, id: 7) == ["next"])
        }
    }

    @Test func aFastConsumerIsNotClosed() async throws {
        try await withServer(Self.configuration(closeTimeout: .seconds(10))) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "steady", "demand": "unlimited"]))
            #expect(try await client.next()["op"] == "subscribed")
            for round in 0..<20 {
                try await server.withHub { hub in
                    for index in 0..<20 { try hub.send(.int(Int64(round * 20 + index)), to: "steady") }
                }
                #expect(try await client.values(20, id: 1) == (0..<20).map { .int(Int64(round * 20 + $0)) })
            }
            #expect(try await server.subscribers(of: "steady") == 1)
        }
    }
}
