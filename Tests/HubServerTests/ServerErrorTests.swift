import HubRegistry
import HubValue
import HubServer
import HubTransport
import Testing
import HubPipeline

/// Every error code the server produces (PROTOCOL.md §6), with where it is reported.
@Suite("HubServer errors")
struct ServerErrorTests {
    @Test func malformedMessagesAreConnectionLevelBadMessages() async throws {
        try await withServer { server in
            let client = try await server.connect()
            for text in ["not json", "[1, 2]", #"{"op": 1}"#, #"{"to": "s"}"#, #"{"op":"send","to":"s","value":1,"ack":"x"}"#] {
                try await client.send(text)
                let error = try await client.next()
                #expect(error["op"] == "error", "\(text)")
                #expect(error["code"] == "bad_message", "\(text)")
                #expect(error["ack"] == nil && error["id"] == nil, "\(text)")
            }
            // The connection stays open.
            try await client.send(json(["op": "list", "ack": 1]))
            #expect(try await client.next()["op"] == "catalog")
        }
    }

    @Test func aMissingFieldIsABadMessageCarryingTheAckOrId() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "send", "value": 1, "ack": 3]))
            let error = try await client.next()
            #expect(error["code"] == "bad_message")
            #expect(error["ack"] == 3)
            try await client.send(json(["op": "subscribe", "id": 4, "to": "s", "pipeline": "s"]))
            let refused = try await client.next()
            #expect(refused["code"] == "bad_message")
            #expect(refused["id"] == 4)
            try await client.send(json(["op": "subscribe", "id": 5, "to": "s", "overflow": "sometimes"]))
            #expect(try await client.next()["code"] == "bad_message")
            try await client.send(json(["op": "subscribe", "id": 6, "to": "bad name!"]))
            let badName = try await client.next()
            #expect(badName["code"] == "bad_message")
            #expect(badName["id"] == 6)
        }
    }

    @Test(arguments: [Value.int(0), -1, 9_007_199_254_740_992, 1.5, "1", nil])
    func aSubscribeWithAnInvalidIdIsAConnectionLevelBadMessage(id: Value) async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": id, "to": "s"]))
            let error = try await client.next()
            #expect(error["code"] == "bad_message")
            #expect(error["id"] == nil)
            #expect(try await server.subscribers(of: "s") == 0)
        }
    }

    @Test func aBinaryMessageIsABadMessageAndTheConnectionStaysOpen() async throws {
        try await withServer { server in
            let client = try await server.connect()
            let sent = try await client.withConnection { $0.send(Array("{\"op\":\"list\",\"ack\":1}".utf8), kind: .binary) }
            #expect(sent)
            let error = try await client.next()
            #expect(error["code"] == "bad_message")
            try await client.send(json(["op": "list", "ack": 2]))
            #expect(try await client.next()["ack"] == 2)
        }
    }

    @Test func anUnknownOpIsReportedWithItsAck() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "dance", "ack": 4]))
            let error = try await client.next()
            #expect(error["code"] == "unknown_op")
            #expect(error["ack"] == 4)
            #expect(error["data"] == ["op": "dance"])
        }
    }

    @Test func unknownNamesAreNotFoundWithoutAutoCreation() async throws {
        try await withServer(serviceConfiguration(hub: Hub.Configuration(autoCreate: false))) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "send", "to": "nope", "value": 1, "ack": 1]))
            let send = try await client.next()
            #expect(send["code"] == "not_found")
            #expect(send["ack"] == 1)
            try await client.send(json(["op": "subscribe", "id": 2, "to": "nope"]))
            let subscribe = try await client.next()
            #expect(subscribe["code"] == "not_found")
            #expect(subscribe["id"] == 2)
            try await client.send(json(["op": "trigger", "name": "nope", "ack": 3]))
            #expect(try await client.next()["code"] == "not_found")
            // Without an ack, a failed request is still reported, connection-level.
            try await client.send(json(["op": "complete", "to": "nope"]))
            let silent = try await client.next()
            #expect(silent["code"] == "not_found")
            #expect(silent["ack"] == nil)
            #expect(try await server.withHub { $0.entry(named: "nope") == nil })
        }
    }

    @Test func aNameOfAnotherKindIsNotFound() async throws {
        try await withServer(setUp: { hub in try hub.declareTrigger("t") }) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "send", "to": "t", "value": 1, "ack": 1]))
            #expect(try await client.next()["code"] == "not_found")
            try await client.send(json(["op": "send", "to": "s", "value": 1, "ack": 2]))
            #expect(try await client.next() == ["op": "ack", "ack": 2])
            try await client.send(json(["op": "trigger", "name": "s", "ack": 3]))
            let error = try await client.next()
            #expect(error["code"] == "not_found")
            #expect(error["ack"] == 3)
        }
    }

    @Test func aLiveIdIsADuplicateAndTheLiveSubscriptionIsUntouched() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "demand": "unlimited"]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send(json(["op": "subscribe", "id": 1, "to": "other"]))
            let error = try await client.next()
            #expect(error["code"] == "duplicate_id")
            #expect(error["id"] == nil)
            #expect(error["data"] == ["id": 1])
            try await client.send(json(["op": "send", "to": "s", "value": "still", "ack": 1]))
            #expect(try await client.next()["op"] == "ack")
            #expect(try await client.values(1, id: 1) == ["still"])
        }
    }

    @Test(arguments: [Value.int(-1), 1.5, "many", true, nil])
    func anInvalidInitialDemandRefusesTheSubscription(demand: Value) async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "demand": demand]))
            let error = try await client.next()
            #expect(error["code"] == "invalid_demand")
            #expect(error["id"] == 1)
            #expect(try await server.subscribers(of: "s") == 0)
        }
    }

    @Test(arguments: [Value.int(0), -3, 1.5, nil, false, "lots"])
    func anInvalidRequestEndsTheSubscription(n: Value) async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s"]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send(json(["op": "request", "id": 1, "n": n]))
            let error = try await client.next()
            #expect(error["code"] == "invalid_demand")
            #expect(error["id"] == 1)
            #expect(try await server.subscribers(of: "s") == 0)
            // The id is free again.
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s"]))
            #expect(try await client.next()["op"] == "subscribed")
        }
    }

    @Test func aPipelineThatDoesNotCompileIsAPipelineErrorWithItsPosition() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": "sequence([1, 2"]))
            let error = try await client.next()
            #expect(error["code"] == "pipeline_error")
            #expect(error["id"] == 1)
            #expect(error["data"]?["line"] == 1)
            #expect(error["data"]?["column"]?.intValue.map { $0 >= 1 } == true)
        }
    }

    @Test func aFailingPipelineIsFailedCarryingTheErrorValue() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": #"fail({"why": "boom"})"#]))
            #expect(try await client.next()["op"] == "subscribed")
            let error = try await client.next()
            #expect(error["code"] == "failed")
            #expect(error["id"] == 1)
            #expect(error["data"] == ["why": "boom"])
        }
    }

    @Test func aFullBufferWithPolicyErrorIsOverflow() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "buffer": 2]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send((1...3).map { json(["op": "send", "to": "s", "value": .int(Int64($0))]) })
            let error = try await client.next()
            #expect(error["code"] == "overflow")
            #expect(error["id"] == 1)
            #expect(try await server.subscribers(of: "s") == 0)
            #expect(try await server.withHub { $0.metrics.overflows } == 1)
        }
    }

    @Test func adHocPipelinesCanBeForbidden() async throws {
        try await withServer(serviceConfiguration(session: SessionConfiguration(allowsPipelines: false))) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": "sequence([1])", "demand": 1]))
            let error = try await client.next()
            #expect(error["code"] == "forbidden")
            #expect(error["id"] == 1)
            // Subjects are still allowed.
            try await client.send(json(["op": "subscribe", "id": 2, "to": "s"]))
            #expect(try await client.next()["op"] == "subscribed")
        }
    }

    @Test func tooManySubscriptionsIsLimitExceeded() async throws {
        try await withServer(serviceConfiguration(session: SessionConfiguration(maxSubscriptions: 2))) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "a"]), json(["op": "subscribe", "id": 2, "to": "b"]))
            #expect(try await client.next(2).map { $0["op"] } == ["subscribed", "subscribed"])
            try await client.send(json(["op": "subscribe", "id": 3, "to": "c"]))
            let error = try await client.next()
            #expect(error["code"] == "limit_exceeded")
            #expect(error["id"] == 3)
            // A cancelled subscription frees its slot.
            try await client.send(json(["op": "cancel", "id": 1]), json(["op": "subscribe", "id": 4, "to": "c"]))
            #expect(try await client.next() == ["op": "subscribed", "id": 4, "kind": "subject"])
        }
    }

    @Test func aPipelineLongerThanTheLimitIsLimitExceeded() async throws {
        let hub = Hub.Configuration(limits: PipelineLimits(maxSourceLength: 64))
        try await withServer(serviceConfiguration(hub: hub)) { server in
            let client = try await server.connect()
            let fits = "sequence([" + String(repeating: "1,", count: 25) + "11])"
            #expect(fits.utf8.count == 64)
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": .string(fits), "demand": 1]))
            #expect(try await client.next()["op"] == "subscribed")
            #expect(try await client.values(1, id: 1) == [1])
            try await client.send(json(["op": "subscribe", "id": 2, "pipeline": .string(fits + " "), "demand": 1]))
            let error = try await client.next()
            #expect(error["code"] == "limit_exceeded")
            #expect(error["id"] == 2)
        }
    }

    @Test func sendingToACompletedSubjectIsCompleted() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "complete", "to": "s", "ack": 1]))
            #expect(try await client.next() == ["op": "ack", "ack": 1])
            for message in [
                json(["op": "send", "to": "s", "value": 1, "ack": 2]),
                json(["op": "complete", "to": "s", "ack": 3]),
                json(["op": "fail", "to": "s", "error": 0, "ack": 4]),
            ] {
                try await client.send(message)
                let error = try await client.next()
                #expect(error["code"] == "completed")
                #expect(error["ack"] != nil)
            }
            // Subscribing to a completed subject completes at once.
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s"]))
            #expect(try await client.next()["op"] == "subscribed")
            #expect(try await client.next() == ["op": "complete", "id": 1])
        }
    }
}
