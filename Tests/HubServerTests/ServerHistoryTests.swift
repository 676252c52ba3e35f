import Foundation
import HubRegistry
import HubServer
import HubTransport
import HubValue
import Testing

/// History over the wire (PROTOCOL.md §10): offsets on `next`, `subscribed` with the
/// epoch and offset, `since` by offset and by count, replay within demand then live
/// with no gap and no duplicate, `recovered: false`, durable subjects across restarts.
@Suite("HubServer history")
struct ServerHistoryTests {
    /// A hub with a subject `h` keeping `size` values.
    private func history(_ size: Int = 100, currentValue: Value? = nil) -> @Sendable (Hub) throws -> Void {
        { hub in try hub.declareSubject("h", initialValue: currentValue, history: HistoryRetention(size: size)) }
    }

    /// Sends `values` to `subject` with acks and waits for every ack.
    private func publish(_ values: ClosedRange<Int>, to subject: String = "h", on client: TestClient) async throws {
        try await client.send(values.map { json(["op": "send", "to": .string(subject), "value": .int(Int64($0)), "ack": .int(Int64($0))]) })
        for value in values { #expect(try await client.next() == ["op": "ack", "ack": .int(Int64(value))]) }
    }

    /// The next `count` values of subscription `id` with their offsets (a batch's values
    /// take the offsets after its first).
    private func entries(_ count: Int, id: Int64, on client: TestClient) async throws -> [(offset: Int64, value: Value)] {
        var result: [(Int64, Value)] = []
        while result.count < count {
            let message = try await client.next()
            guard message["op"] == "next", message["id"] == .int(id), let offset = message["offset"]?.intValue else {
                throw UnexpectedEvent(description: "expected next with an offset for \(id), got \(message)")
            }
            if let value = message["value"] {
                result.append((offset, value))
            } else if let values = message["values"]?.arrayValue {
                for (index, value) in values.enumerated() { result.append((offset + Int64(index), value)) }
            }
        }
        return result
    }

    @Test("each value carries its offset; subscribed carries the epoch and the latest offset")
    func offsets() async throws {
        try await withServer(setUp: history()) { server in
            let client = try await server.connect()
            try await publish(1...3, on: client)
            try await client.send(json(["op": "subscribe", "id": 1, "to": "h", "demand": "unlimited"]))
            let subscribed = try await client.next()
            #expect(subscribed["op"] == "subscribed")
            #expect(subscribed["offset"] == 3)
            #expect(subscribed["epoch"]?.stringValue?.isEmpty == false)
            #expect(subscribed["recovered"] == nil)
            try await client.send(json(["op": "send", "to": "h", "value": "x"]))
            #expect(try await client.next() == ["op": "next", "id": 1, "offset": 4, "value": "x"])
        }
    }

    @Test("since an offset: the values after it, within demand, then live, with no gap and no duplicate")
    func resumeWithinDemand() async throws {
        try await withServer(setUp: history()) { server in
            let publisher = try await server.connect()
            try await publisher.send(json(["op": "subscribe", "id": 9, "to": "h"]))
            let epoch = try await publisher.next()["epoch"]!
            try await publish(1...6, on: publisher)

            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "h", "demand": 2, "since": ["offset": 2, "epoch": epoch]]))
            #expect(try await client.next() == ["op": "subscribed", "id": 1, "kind": "subject", "epoch": epoch, "offset": 6, "recovered": true])
            #expect(try await entries(2, id: 1, on: client).map(\.offset) == [3, 4])
            await client.expectNothing()
            // Values published while the replay waits for demand are part of it.
            try await publish(7...8, on: publisher)
            try await client.send(json(["op": "request", "id": 1, "n": 3]))
            let next = try await entries(3, id: 1, on: client)
            #expect(next.map(\.offset) == [5, 6, 7])
            #expect(next.map(\.value) == [5, 6, 7])
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": "unlimited"]))
            #expect(try await entries(1, id: 1, on: client).map(\.offset) == [8])
            try await publish(9...10, on: publisher)
            #expect(try await entries(2, id: 1, on: client).map(\.offset) == [9, 10])
            await client.expectNothing()
        }
    }

    @Test("since the last K: the last K values, then live")
    func lastK() async throws {
        try await withServer(setUp: history()) { server in
            let client = try await server.connect()
            try await publish(1...5, on: client)
            try await client.send(json(["op": "subscribe", "id": 1, "to": "h", "demand": 10, "since": ["last": 2]]))
            let subscribed = try await client.next()
            #expect(subscribed["recovered"] == true)
            #expect(subscribed["offset"] == 5)
            #expect(try await entries(2, id: 1, on: client).map(\.value) == [4, 5])
            try await client.send(json(["op": "send", "to": "h", "value": 6]))
            #expect(try await entries(1, id: 1, on: client).map(\.offset) == [6])
            // More than the history holds: what it holds.
            try await client.send(json(["op": "subscribe", "id": 2, "to": "h", "demand": 100, "since": ["last": 1000]]))
            #expect(try await client.next()["recovered"] == true)
            #expect(try await entries(6, id: 2, on: client).map(\.offset) == [1, 2, 3, 4, 5, 6])
            await client.expectNothing()
        }
    }

    @Test("an offset no longer in history, or of another epoch: recovered false, then live from now")
    func notRecovered() async throws {
        try await withServer(setUp: history(3)) { server in
            let client = try await server.connect()
            try await publish(1...10, on: client)
            try await client.send(json(["op": "subscribe", "id": 1, "to": "h", "demand": 10, "since": ["offset": 2]]))
            let first = try await client.next()
            #expect(first["recovered"] == false)
            #expect(first["offset"] == 10)
            try await client.send(json(["op": "subscribe", "id": 2, "to": "h", "demand": 10, "since": ["offset": 9, "epoch": "another"]]))
            #expect(try await client.next()["recovered"] == false)
            try await client.send(json(["op": "subscribe", "id": 3, "to": "h", "demand": 10, "since": ["offset": 99]]))
            #expect(try await client.next()["recovered"] == false)
            await client.expectNothing()
            try await client.send(json(["op": "send", "to": "h", "value": 11]))
            var seen: [Int64: [Int64]] = [:]
            for message in try await client.next(3) { seen[message["id"]!.intValue!, default: []].append(message["offset"]!.intValue!) }
            #expect(seen == [1: [11], 2: [11], 3: [11]])
            // Within what is kept: recovered.
            try await client.send(json(["op": "subscribe", "id": 4, "to": "h", "demand": 10, "since": ["offset": 8]]))
            #expect(try await client.next()["recovered"] == true)
            #expect(try await entries(3, id: 4, on: client).map(\.offset) == [9, 10, 11])
        }
    }

    @Test("since on a name without history: recovered false, no epoch, live")
    func sinceWithoutHistory() async throws {
        try await withServer { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "plain", "demand": 5, "since": ["last": 3]]))
            #expect(try await client.next() == ["op": "subscribed", "id": 1, "kind": "subject", "recovered": false])
            try await client.send(json(["op": "send", "to": "plain", "value": 1]))
            #expect(try await client.next() == ["op": "next", "id": 1, "value": 1])
        }
    }

    @Test("a bad since is refused on its id")
    func badSince() async throws {
        try await withServer(setUp: history()) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "h", "since": ["offset": -3]]))
            let error = try await client.next()
            #expect(error["op"] == "error")
            #expect(error["id"] == 1)
            #expect(error["code"] == "bad_message")
        }
    }

    @Test("a current-value subject with history: its current value with its offset; a resumed subscriber up to date gets nothing twice")
    func currentValue() async throws {
        try await withServer(setUp: history(10, currentValue: "initial")) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "h", "demand": 1]))
            #expect(try await client.next()["offset"] == 0)
            #expect(try await client.next() == ["op": "next", "id": 1, "offset": 0, "value": "initial"])
            try await publish(1...2, on: client)
            try await client.send(json(["op": "subscribe", "id": 2, "to": "h", "demand": 5]))
            _ = try await client.next()
            #expect(try await client.next() == ["op": "next", "id": 2, "offset": 2, "value": 2])
            try await client.send(json(["op": "subscribe", "id": 3, "to": "h", "demand": 5, "since": ["offset": 2]]))
            #expect(try await client.next()["recovered"] == true)
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 5]))
            #expect(try await entries(2, id: 1, on: client).map(\.offset) == [1, 2])
            try await client.send(json(["op": "send", "to": "h", "value": 3]))
            var seen: [Int64: [Int64]] = [:]
            for message in try await client.next(3) { seen[message["id"]!.intValue!, default: []].append(message["offset"]!.intValue!) }
            #expect(seen == [1: [3], 2: [3], 3: [3]])
        }
    }

    @Test("batched next carries the first value's offset")
    func batches() async throws {
        try await withServer(setUp: history()) { server in
            let client = try await server.connect()
            try await publish(1...50, on: client)
            try await client.send(json(["op": "subscribe", "id": 1, "to": "h", "demand": "unlimited", "batch": true, "since": ["offset": 0]]))
            #expect(try await client.next()["recovered"] == true)
            var replayed: [(offset: Int64, value: Value)] = []
            var messages = 0
            while replayed.count < 50 {
                replayed += try await entries(1, id: 1, on: client)
                messages += 1
            }
            #expect(replayed.map(\.offset) == Array(1...50))
            #expect(replayed.map(\.value) == (1...50).map { Value.int(Int64($0)) })
            #expect(messages < 50, "the replay went out in batches")
        }
    }

    @Test("a replay racing live values delivers every value once, in order")
    func replayDuringTraffic() async throws {
        try await withServer(setUp: history(10_000)) { server in
            let publisher = try await server.connect()
            try await publish(1...500, on: publisher)
            let client = try await server.connect()
            // The replay starts while the publisher keeps sending.
            try await publisher.send((501...1500).map { json(["op": "send", "to": "h", "value": .int(Int64($0))]) })
            try await client.send(json(["op": "subscribe", "id": 1, "to": "h", "demand": 7, "since": ["offset": 100]]))
            #expect(try await client.next()["recovered"] == true)
            var offsets: [Int64] = []
            while offsets.count < 1400 {
                let batch = try await entries(7, id: 1, on: client)
                offsets += batch.map(\.offset)
                try await client.send(json(["op": "request", "id": 1, "n": 7]))
            }
            #expect(offsets == Array(101...Int64(100 + offsets.count)))
            #expect(offsets.last == 1500)
        }
    }

    @Test("a subject completes after the values its subscribers still replay")
    func completeAfterReplay() async throws {
        try await withServer(setUp: history()) { server in
            let client = try await server.connect()
            try await publish(1...4, on: client)
            try await client.send(json(["op": "complete", "to": "h", "ack": 99]))
            #expect(try await client.next() == ["op": "ack", "ack": 99])
            try await client.send(json(["op": "subscribe", "id": 1, "to": "h", "demand": 2, "since": ["offset": 1]]))
            #expect(try await client.next()["recovered"] == true)
            #expect(try await entries(2, id: 1, on: client).map(\.offset) == [2, 3])
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 5]))
            #expect(try await entries(1, id: 1, on: client).map(\.offset) == [4])
            #expect(try await client.next() == ["op": "complete", "id": 1])
        }
    }

    @Test("a subscriber that falls behind the history during its replay fails with overflow")
    func fallsBehind() async throws {
        try await withServer(setUp: history(5)) { server in
            let client = try await server.connect()
            try await publish(1...5, on: client)
            try await client.send(json(["op": "subscribe", "id": 1, "to": "h", "demand": 1, "since": ["offset": 0]]))
            #expect(try await client.next()["recovered"] == true)
            #expect(try await entries(1, id: 1, on: client).map(\.offset) == [1])
            try await publish(6...20, on: client)
            try await client.send(json(["op": "request", "id": 1, "n": 5]))
            let error = try await client.next()
            #expect(error["op"] == "error")
            #expect(error["id"] == 1)
            #expect(error["code"] == "overflow")
        }
    }

    @Test("cancel during a replay stops it; nothing more is sent for the id")
    func cancelDuringReplay() async throws {
        try await withServer(setUp: history()) { server in
            let client = try await server.connect()
            try await publish(1...20, on: client)
            try await client.send(json(["op": "subscribe", "id": 1, "to": "h", "demand": 3, "since": ["offset": 0]]))
            _ = try await client.next()
            #expect(try await entries(3, id: 1, on: client).count == 3)
            try await client.send(json(["op": "cancel", "id": 1]), json(["op": "request", "id": 1, "n": 10]))
            try await publish(21...22, on: client)
            await client.expectNothing()
            #expect(try await server.subscribers(of: "h") == 0)
        }
    }
}
