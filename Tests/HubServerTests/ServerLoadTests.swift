import HubValue
import HubServer
import HubTransport
import Testing

/// Fragmentation, large values, the batch form of `next`, many subscriptions and
/// many connections, and the encode-once fan-out.
@Suite("HubServer load")
struct ServerLoadTests {
    @Test func fragmentedClientMessagesAreReassembled() async throws {
        try await withServer { server in
            var configuration = WebSocketClient.Configuration()
            configuration.limits = WebSocketConnection.Limits(fragmentSize: 7)
            let client = try await server.connect(configuration: configuration)
            try await client.send(json(["op": "subscribe", "id": 1, "to": "fragments", "demand": "unlimited"]))
            #expect(try await client.next() == ["op": "subscribed", "id": 1, "kind": "subject"])
            let value: Value = ["text": "split across many frames ✓", "n": [1, 2, 3]]
            try await client.send(json(["op": "send", "to": "fragments", "value": value, "ack": 2]))
            #expect(try await client.next() == ["op": "ack", "ack": 2])
            #expect(try await client.values(1, id: 1) == [value])
        }
    }

    @Test func largeValuesTravelBothWays() async throws {
        try await withServer { server in
            let subscriber = try await server.connect()
            let publisher = try await server.connect()
            try await subscriber.send(json(["op": "subscribe", "id": 1, "to": "big", "demand": "unlimited"]))
            #expect(try await subscriber.next()["op"] == "subscribed")
            let text = String((0..<(600 << 10)).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
            let array = Value.array((0..<40_000).map { .int(Int64($0)) })
            try await publisher.send(
                json(["op": "send", "to": "big", "value": .string(text), "ack": 1]),
                json(["op": "send", "to": "big", "value": array, "ack": 2]))
            #expect(try await publisher.next(2) == [["op": "ack", "ack": 1], ["op": "ack", "ack": 2]])
            let values = try await subscriber.values(2, id: 1)
            #expect(values.first?.stringValue?.utf8.count == 600 << 10)
            #expect(values.first == .string(text))
            #expect(values.last == array)
        }
    }

    @Test func helloBatchDeliversValuesArraysWithinDemandAndInOrder() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(
                json(["op": "hello", "batch": true]),
                json(["op": "subscribe", "id": 1, "to": "b", "demand": 5]))
            #expect(try await client.next()["op"] == "subscribed")
            try await server.withHub { hub in
                for value in 1...20 { try hub.send(.int(Int64(value)), to: "b") }
            }
            var received: [Value] = []
            var largestBatch = 0
            while received.count < 5 {
                let message = try await client.next()
                #expect(message["op"] == "next" && message["value"] == nil)
                let values = message["values"]?.arrayValue ?? []
                #expect(!values.isEmpty)
                largestBatch = max(largestBatch, values.count)
                received += values
            }
            #expect(received == (1...5).map { .int(Int64($0)) })
            #expect(largestBatch > 1)
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 100]))
            #expect(try await client.values(15, id: 1) == (6...20).map { .int(Int64($0)) })
            await client.expectNothing()
        }
    }

    @Test func largeValuesInBatchesKeepTheirOrder() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "big", "demand": 6, "batch": true]))
            #expect(try await client.next()["op"] == "subscribed")
            let values = (0..<8).map { index in
                Value.string(String(repeating: Character(UnicodeScalar(UInt8(65 + index))), count: (90 << 10) + index * 20_000))
            }
            try await server.withHub { hub in
                for value in values { try hub.send(value, to: "big") }
            }
            #expect(try await client.values(6, id: 1) == Array(values.prefix(6)))
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": "unlimited"]))
            #expect(try await client.values(2, id: 1) == Array(values.suffix(2)))
        }
    }

    @Test func subscribeBatchIsPerSubscription() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(
                json(["op": "subscribe", "id": 1, "to": "b", "demand": "unlimited", "batch": true]),
                json(["op": "subscribe", "id": 2, "to": "b", "demand": "unlimited"]))
            #expect(try await client.next(2).map { $0["op"] } == ["subscribed", "subscribed"])
            try await server.withHub { hub in
                for value in 1...10 { try hub.send(.int(Int64(value)), to: "b") }
            }
            var batched: [Value] = []
            var single: [Value] = []
            while batched.count < 10 || single.count < 10 {
                let message = try await client.next()
                if message["id"] == 1 {
                    #expect(message["value"] == nil)
                    batched += message["values"]?.arrayValue ?? []
                } else {
                    #expect(message["values"] == nil)
                    single += message["value"].map { [$0] } ?? []
                }
            }
            let expected = (1...10).map { Value.int(Int64($0)) }
            #expect(batched == expected)
            #expect(single == expected)
        }
    }

    @Test func aThousandSubscriptionsOnOneConnection() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send((1...1000).map { json(["op": "subscribe", "id": .int(Int64($0)), "to": "fan", "demand": 1]) })
            let subscribed = try await client.next(1000)
            #expect(subscribed.allSatisfy { $0["op"] == "subscribed" })
            #expect(Set(subscribed.compactMap { $0["id"]?.intValue }) == Set(1...1000))
            #expect(try await server.subscribers(of: "fan") == 1000)
            #expect(await server.service.statistics.subscriptions == 1000)
            let before = await server.service.statistics
            try await server.withHub { hub in
                try hub.send(["headline": "the same value for a thousand subscribers"], to: "fan")
                try hub.send("a second value, past every demand", to: "fan")
            }
            var ids = Set<Int64>()
            for _ in 0..<1000 {
                let message = try await client.next()
                #expect(message["value"] == ["headline": "the same value for a thousand subscribers"])
                ids.insert(message["id"]?.intValue ?? 0)
            }
            #expect(ids == Set(1...1000))
            await client.expectNothing()
            // One encoding, 999 copies from the cache.
            let after = await server.service.statistics
            #expect(after.encodingCacheMisses - before.encodingCacheMisses == 1)
            #expect(after.encodingCacheHits - before.encodingCacheHits == 999)
        }
    }

    @Test func twoHundredConcurrentConnections() async throws {
        let server = try await HubServerHarness()
        do {
            let clients = try await withThrowingTaskGroup(of: TestClient.self) { group in
                for _ in 0..<200 { group.addTask { try await server.connect() } }
                var clients: [TestClient] = []
                for try await client in group { clients.append(client) }
                return clients
            }
            #expect(Set(clients.map(\.welcome)).count == 200)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, client) in clients.enumerated() {
                    group.addTask {
                        try await client.send(
                            json(["op": "subscribe", "id": 1, "to": "everyone", "demand": "unlimited"]),
                            json(["op": "subscribe", "id": 2, "to": .string("own_\(index)"), "demand": 1]))
                        let answers = try await client.next(2)
                        guard answers.allSatisfy({ $0["op"] == "subscribed" }) else {
                            throw UnexpectedEvent(description: "\(answers)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await server.subscribers(of: "everyone") == 200)
            let before = await server.service.statistics
            try await server.withHub { hub in try hub.send(["to": "everyone, encoded once"], to: "everyone") }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, client) in clients.enumerated() {
                    group.addTask {
                        let broadcast = try await client.next()
                        guard broadcast == ["op": "next", "id": 1, "value": ["to": "everyone, encoded once"]] else {
                            throw UnexpectedEvent(description: "\(broadcast)")
                        }
                        try await client.send(json(["op": "send", "to": .string("own_\(index)"), "value": .int(Int64(index)), "ack": 1]))
                        let ack = try await client.next()
                        let own = try await client.next()
                        guard ack == ["op": "ack", "ack": 1], own == ["op": "next", "id": 2, "value": .int(Int64(index))] else {
                            throw UnexpectedEvent(description: "\(ack) \(own)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let after = await server.service.statistics
            #expect(after.connections == 200)
            #expect(after.encodingCacheHits - before.encodingCacheHits == 199)
            // Shutting down with 200 live subscribers is prompt and every client sees 1001.
            let clock = ContinuousClock()
            let start = clock.now
            await server.service.shutdown()
            #expect(start.duration(to: clock.now) < .seconds(30))  // a hang guard, not a speed test
            for client in clients {
                let close = try await client.expectClose()
                #expect(close.code == 1001)
                // Before the close, each live subscription ends with shutting_down.
                #expect(close.skipped.map { $0["code"] } == ["shutting_down", "shutting_down"])
                #expect(close.skipped.map { $0["id"] } == [1, 2])
            }
        } catch {
            await server.stop()
            throw error
        }
        server.clientLoop.shutdown()
    }
}
