import HubServer
import HubTransport
import Testing

/// Every client operation of PROTOCOL.md §3 against a real server over WebSocket.
@Suite("Protocol operations over a real socket")
struct ServerProtocolOperationsTests {
    @Test func welcomeNamesProtocolServerAndAUniqueSession() async throws {
        try await withServer { server in
            let a = try await server.connect()
            let b = try await server.connect()
            #expect(a.welcome["protocol"] == 1)
            #expect(a.welcome["server"] == "reactive-hub/0.1")
            #expect(a.welcome["session"]?.stringValue?.isEmpty == false)
            #expect(a.welcome["session"] != b.welcome["session"])
            let subprotocol = try await a.withConnection { $0.subprotocol }
            #expect(subprotocol == "hub.v1")
        }
    }

    @Test func aClientOfferingNoSubprotocolIsWelcomed() async throws {
        try await withServer { server in
            let client = try await server.connect(subprotocol: nil)
            #expect(client.welcome["op"] == "welcome")
        }
    }

    @Test func helloIsNotAnswered() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "hello", "client": "tests", "token": "ignored"]))
            await client.expectNothing()
            try await client.send(json(["op": "list", "ack": 1]))
            #expect(try await client.next()["op"] == "catalog")
        }
    }

    @Test func subscribeThenSendAcksBeforeTheValue() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "prices", "demand": 2]))
            #expect(try await client.next() == ["op": "subscribed", "id": 1, "kind": "subject"])
            try await client.send(json(["op": "send", "to": "prices", "value": 101.5, "ack": 7]))
            #expect(try await client.next() == ["op": "ack", "ack": 7])
            #expect(try await client.next() == ["op": "next", "id": 1, "value": 101.5])
        }
    }

    @Test func valuesReachOtherConnections() async throws {
        try await withServer { server in
            let subscriber = try await server.connect()
            let publisher = try await server.connect()
            try await subscriber.send(json(["op": "subscribe", "id": 5, "to": "s", "demand": "unlimited"]))
            #expect(try await subscriber.next()["op"] == "subscribed")
            try await publisher.send(
                json(["op": "send", "to": "s", "value": ["a": [1, 2], "b": "ü✓"]]),
                json(["op": "send", "to": "s", "value": 9_007_199_254_740_993]))
            let values = try await subscriber.values(2, id: 5)
            #expect(values == [["a": [1, 2], "b": "ü✓"], .int(9_007_199_254_740_993)])
            await publisher.expectNothing()
        }
    }

    @Test func triggersDeliverTheirKeys() async throws {
        try await withServer(setUp: { hub in try hub.declareTrigger("door") }) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "door", "demand": "unlimited"]))
            #expect(try await client.next() == ["op": "subscribed", "id": 1, "kind": "trigger"])
            try await client.send(json(["op": "trigger", "name": "door", "key": "front", "ack": 1]))
            #expect(try await client.next() == ["op": "ack", "ack": 1])
            #expect(try await client.next() == ["op": "next", "id": 1, "value": "front"])
            try await client.send(json(["op": "trigger", "name": "door", "ack": 2]))
            #expect(try await client.next() == ["op": "ack", "ack": 2])
            #expect(try await client.next() == ["op": "next", "id": 1, "value": nil])
        }
    }

    @Test func pipelinesAreCompiledPerSubscription() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": "sequence([1, 2, 3]) | map(. * 10)", "demand": "unlimited"]))
            #expect(try await client.next() == ["op": "subscribed", "id": 1, "kind": "pipeline"])
            #expect(try await client.values(3, id: 1) == [10, 20, 30])
            #expect(try await client.next() == ["op": "complete", "id": 1])
        }
    }

    @Test func aCurrentValueSubjectStartsWithItsValue() async throws {
        try await withServer(setUp: { hub in try hub.declareSubject("temperature", initialValue: 21) }) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "temperature"]))
            #expect(try await client.next()["op"] == "subscribed")
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 2]))
            #expect(try await client.values(1, id: 1) == [21])
            try await client.send(json(["op": "send", "to": "temperature", "value": 22, "ack": 1]))
            #expect(try await client.next() == ["op": "ack", "ack": 1])
            #expect(try await client.values(1, id: 1) == [22])
        }
    }

    @Test func requestGrantsMoreValues() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s"]))
            #expect(try await client.next()["op"] == "subscribed")
            for value in 1...3 { try await client.send(json(["op": "send", "to": "s", "value": .int(Int64(value))])) }
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 2]))
            #expect(try await client.values(2, id: 1) == [1, 2])
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 1]))
            #expect(try await client.values(1, id: 1) == [3])
        }
    }

    @Test func cancelIsNeverAnsweredAndStopsUpstream() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "demand": "unlimited"]))
            #expect(try await client.next()["op"] == "subscribed")
            #expect(try await server.subscribers(of: "s") == 1)
            try await client.send(json(["op": "cancel", "id": 1]))
            try await client.send(json(["op": "send", "to": "s", "value": 1, "ack": 2]))
            #expect(try await client.next() == ["op": "ack", "ack": 2])
            await client.expectNothing()
            #expect(try await server.subscribers(of: "s") == 0)
            // Cancelling an id that is not live is silent too.
            try await client.send(json(["op": "cancel", "id": 99]))
            await client.expectNothing()
        }
    }

    @Test func completeEndsSubscriptionsAfterTheAck() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "demand": 1]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send(json(["op": "complete", "to": "s", "ack": 3]))
            #expect(try await client.next() == ["op": "ack", "ack": 3])
            #expect(try await client.next() == ["op": "complete", "id": 1])
            await client.expectNothing()
        }
    }

    @Test func failEndsSubscriptionsWithFailedCarryingTheError() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s"]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send(json(["op": "fail", "to": "s", "error": ["reason": "gone"], "ack": 4]))
            #expect(try await client.next() == ["op": "ack", "ack": 4])
            let error = try await client.next()
            #expect(error["op"] == "error")
            #expect(error["id"] == 1)
            #expect(error["code"] == "failed")
            #expect(error["data"] == ["reason": "gone"])
        }
    }

    @Test func listReturnsTheCatalog() async throws {
        try await withServer(setUp: { hub in
            try hub.declareSubject("temperature", initialValue: 21)
            try hub.declareTrigger("reset")
        }) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "alpha"]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send(json(["op": "list", "ack": 9]))
            let catalog = try await client.next()
            #expect(catalog["op"] == "catalog")
            #expect(catalog["ack"] == 9)
            #expect(catalog["subjects"] == [
                ["name": "alpha", "kind": "passthrough", "subscribers": 1, "state": "open"],
                ["name": "temperature", "kind": "currentValue", "value": 21, "subscribers": 0, "state": "open"],
            ])
            #expect(catalog["pipelines"] == [])
            #expect(catalog["triggers"] == [["name": "reset", "subscribers": 0]])
            #expect(catalog["connections"] == 1)
        }
    }
}
