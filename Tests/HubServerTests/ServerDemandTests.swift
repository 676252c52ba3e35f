import HubValue
import HubServer
import HubTransport
import Testing

/// The demand rules 1–7 of PROTOCOL.md §5 (rule 8 is in ``SlowConsumerTests``).
@Suite("HubServer demand")
struct ServerDemandTests {
    /// Rule 1: never more values than granted.
    @Test func neverMoreThanTheGrantedDemand() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "demand": 3]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send((1...10).map { json(["op": "send", "to": "s", "value": .int(Int64($0))]) })
            #expect(try await client.values(3, id: 1) == [1, 2, 3])
            await client.expectNothing()
        }
    }

    /// Rule 2: demand adds up; unlimited absorbs; a huge total is unlimited.
    @Test func demandIsAdditiveAndUnlimitedAbsorbs() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "demand": 1]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send(
                json(["op": "request", "id": 1, "n": 2]), json(["op": "request", "id": 1, "n": 2]))
            try await client.send((1...8).map { json(["op": "send", "to": "s", "value": .int(Int64($0))]) })
            #expect(try await client.values(5, id: 1) == [1, 2, 3, 4, 5])
            await client.expectNothing()
            try await client.send(
                json(["op": "request", "id": 1, "n": "unlimited"]), json(["op": "request", "id": 1, "n": 1]))
            #expect(try await client.values(3, id: 1) == [6, 7, 8])
            try await client.send((9...20).map { json(["op": "send", "to": "s", "value": .int(Int64($0))]) })
            #expect(try await client.values(12, id: 1) == (9...20).map { Value.int(Int64($0)) })
        }
    }

    @Test func aRunningTotalAtTwoToTheFiftyThreeIsUnlimited() async throws {
        try await withServer { server in
            let client = try await server.connect()
            let big = Int64(1) << 52
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "demand": .int(big)]))
            #expect(try await client.next()["op"] == "subscribed")
            // 2^52 + 2^52 − 1 = 2^53 − 1: unlimited; further requests are still accepted.
            try await client.send(
                json(["op": "request", "id": 1, "n": .int(big - 1)]), json(["op": "request", "id": 1, "n": .int(big)]),
                json(["op": "send", "to": "s", "value": 1]))
            #expect(try await client.values(1, id: 1) == [1])
        }
    }

    /// Rule 3: an integral float is accepted; a request for an id that is not live is ignored.
    @Test func integralFloatsAreAcceptedAndUnknownIdsIgnored() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s"]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send(#"{"op":"request","id":1,"n":2.0}"#, #"{"op":"request","id":1,"n":1e0}"#)
            try await client.send(json(["op": "request", "id": 77, "n": 5]))
            try await client.send((1...4).map { json(["op": "send", "to": "s", "value": .int(Int64($0))]) })
            #expect(try await client.values(3, id: 1) == [1, 2, 3])
            await client.expectNothing()
        }
    }

    /// Rule 4: nothing after complete; the id is reusable.
    @Test func anIdIsReusableAfterItsCompletion() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": "just(1)", "demand": 5]))
            #expect(try await client.next()["op"] == "subscribed")
            #expect(try await client.values(1, id: 1) == [1])
            #expect(try await client.next() == ["op": "complete", "id": 1])
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": "just(2)", "demand": 5]))
            #expect(try await client.next() == ["op": "subscribed", "id": 1, "kind": "pipeline"])
            #expect(try await client.values(1, id: 1) == [2])
            #expect(try await client.next() == ["op": "complete", "id": 1])
            await client.expectNothing()
        }
    }

    /// Rule 5: after cancel, buffered values are freed and no completion is sent.
    @Test func cancelDropsBufferedValuesAndSendsNoCompletion() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s"]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send(
                json(["op": "send", "to": "s", "value": 1]), json(["op": "send", "to": "s", "value": 2]),
                json(["op": "cancel", "id": 1]), json(["op": "request", "id": 1, "n": 5]),
                json(["op": "complete", "to": "s", "ack": 1]))
            #expect(try await client.next() == ["op": "ack", "ack": 1])
            await client.expectNothing()
            #expect(try await server.subscribers(of: "s") == 0)
        }
    }

    /// Rule 6: a cold sequence produces only what is demanded.
    @Test func aColdSequenceProducesOnlyWhatIsDemanded() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": "sequence([1, 2, 3, 4, 5])", "demand": 2]))
            #expect(try await client.next()["op"] == "subscribed")
            #expect(try await client.values(2, id: 1) == [1, 2])
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 2]))
            #expect(try await client.values(2, id: 1) == [3, 4])
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 10]))
            #expect(try await client.values(1, id: 1) == [5])
            #expect(try await client.next() == ["op": "complete", "id": 1])
        }
    }

    /// Rule 6: a timer ticks only with demand (the skipped ticks themselves are checked in
    /// virtual time by PipelineDemandTests): over the network, each request gets one tick,
    /// and nothing else is queued after it.
    @Test func aTimerTicksOnlyWithDemand() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": "timer(10ms)", "demand": 2]))
            #expect(try await client.next()["op"] == "subscribed")
            // Tick numbers, increasing (a loaded machine may run a late timer past a number).
            let first = try await client.values(2, id: 1).compactMap(\.intValue)
            #expect(first.count == 2 && first[0] < first[1], "ticks \(first)")
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 1]))
            let next = try await client.values(1, id: 1).compactMap(\.intValue)
            #expect(next.count == 1 && next[0] > (first.last ?? 0), "\(next) after \(first)")
            await client.expectNothing()
        }
    }

    /// Rule 7: the overflow policies of a hot subscription's buffer.
    @Test(arguments: [
        ("dropOldest", [Value.int(3), 4, 5], 2),
        ("dropNewest", [Value.int(1), 2, 3], 2),
        ("latest", [Value.int(4), 5], 3),
    ])
    func overflowPolicies(policy: String, expected: [Value], dropped: Int) async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "buffer": 3, "overflow": .string(policy)]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send((1...5).map { json(["op": "send", "to": "s", "value": .int(Int64($0))]) })
            try await client.send(json(["op": "list", "ack": 1]))
            #expect(try await client.next()["op"] == "catalog")
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": "unlimited"]))
            #expect(try await client.values(expected.count, id: 1) == expected)
            await client.expectNothing()
            #expect(try await server.withHub { $0.metrics.dropped } == dropped)
        }
    }

    /// Rule 7: a hot completion waits behind the buffered values and needs no demand.
    @Test func aHotCompletionFollowsTheBufferedValues() async throws {
        try await withServer { server in
            let client = try await server.connect()
            let publisher = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s"]))
            #expect(try await client.next()["op"] == "subscribed")
            try await publisher.send(
                json(["op": "send", "to": "s", "value": 1]), json(["op": "send", "to": "s", "value": 2]),
                json(["op": "complete", "to": "s", "ack": 3]))
            #expect(try await publisher.next() == ["op": "ack", "ack": 3])
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 1]))
            #expect(try await client.values(1, id: 1) == [1])
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 1]))
            #expect(try await client.values(1, id: 1) == [2])
            #expect(try await client.next() == ["op": "complete", "id": 1])
        }
    }
}
