import CSQLite
import Foundation
import HubRegistry
import HubServer
import HubSQLite
import HubValue
import Testing

/// Table subjects over the wire: upserts and deletes, the snapshot then the changes within
/// the subscriber's demand, `since`, refusals and bounds, `get`, a pipeline writing into a
/// table and one reading it, and a durable table across restarts with one stored row per key.
@Suite("HubServer table subjects")
struct ServerTableTests {
    private let declare: @Sendable (Hub) throws -> Void = { hub in
        try hub.declareSubject("positions", history: HistoryRetention(size: 100), table: SubjectTable.Limits(maxKeys: 3, maxBytes: 4096))
        try hub.declareSubject("plain")
    }

    private func change(_ key: String, _ value: Value) -> Value { ["key": .string(key), "value": value] }

    private func send(_ client: TestClient, _ value: Value, ack: Int64, to name: String = "positions") async throws -> Value {
        try await client.send(json(["op": "send", "to": .string(name), "value": value, "ack": .int(ack)]))
        return try await client.next()
    }

    @Test("a subscriber gets the snapshot in offset order, one entry per request, then the changes")
    func snapshotThenChangesWithinDemand() async throws {
        try await withServer(serviceConfiguration(), setUp: declare) { server in
            let client = try await server.connect()
            #expect(try await send(client, change("AAPL", 1), ack: 1) == ["op": "ack", "ack": 1])
            #expect(try await send(client, change("MSFT", 2), ack: 2) == ["op": "ack", "ack": 2])
            #expect(try await send(client, change("AAPL", 3), ack: 3) == ["op": "ack", "ack": 3])
            #expect(try await send(client, ["key": "GOOG", "value": 4], ack: 4) == ["op": "ack", "ack": 4])
            #expect(try await send(client, ["key": "GOOG", "value": .null], ack: 5) == ["op": "ack", "ack": 5])
            // An integer key is its decimal text.
            let seven = try await send(client, ["key": 7, "value": "seven"], ack: 6)
            #expect(seven == ["op": "ack", "ack": 6], "\(seven)")

            try await client.send(json(["op": "subscribe", "id": 1, "to": "positions", "demand": 1]))
            let subscribed = try await client.next()
            #expect(subscribed["op"] == "subscribed")
            #expect(subscribed["offset"] == 6)
            #expect(subscribed["recovered"] == nil)
            // One entry per request: MSFT (offset 2), AAPL (3), "7" (6); GOOG was deleted.
            #expect(try await client.next() == ["op": "next", "id": 1, "offset": 2, "value": change("MSFT", 2)])
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 1]))
            #expect(try await client.next() == ["op": "next", "id": 1, "offset": 3, "value": change("AAPL", 3)])
            await client.expectNothing()
            // A change made while the snapshot is delivered is not missed: it follows it.
            #expect(try await send(client, change("MSFT", .null), ack: 7) == ["op": "ack", "ack": 7])
            try await client.send(json(["op": "request", "id": 1, "n": 1]))
            #expect(try await client.next() == ["op": "next", "id": 1, "offset": 6, "value": change("7", "seven")])
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 1]))
            #expect(try await client.next() == ["op": "next", "id": 1, "offset": 7, "value": change("MSFT", .null)])
            await client.expectNothing()
            // Live changes, within the demand.
            #expect(try await send(client, change("IBM", 5), ack: 8) == ["op": "ack", "ack": 8])
            await client.expectNothing()
            try await client.send(json(["op": "request", "id": 1, "n": 1]))
            #expect(try await client.next() == ["op": "next", "id": 1, "offset": 8, "value": change("IBM", 5)])
        }
    }

    @Test("since resumes the changes after an offset, or gives the snapshot again when they are gone")
    func sinceResumes() async throws {
        try await withServer(serviceConfiguration(), setUp: { hub in
            try hub.declareSubject("t", history: HistoryRetention(size: 2), table: SubjectTable.Limits())
        }) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "t", "demand": 0]))
            let epoch = try #require(try await client.next()["epoch"])
            for (index, key) in ["a", "b", "c"].enumerated() {
                #expect(try await send(client, change(key, .int(Int64(index))), ack: Int64(index + 1), to: "t")["op"] == "ack")
            }
            // Offset 2: the changelog (two changes) still holds offset 3.
            try await client.send(json(["op": "subscribe", "id": 2, "to": "t", "demand": 10, "since": ["offset": 2, "epoch": epoch]]))
            #expect(try await client.next() == ["op": "subscribed", "id": 2, "kind": "subject", "epoch": epoch, "offset": 3, "recovered": true])
            #expect(try await client.values(1, id: 2) == [change("c", 2)])
            await client.expectNothing()
            // Offset 0: the changelog no longer holds offset 1: the snapshot again, not recovered.
            try await client.send(json(["op": "subscribe", "id": 3, "to": "t", "demand": 10, "since": ["offset": 0, "epoch": epoch]]))
            #expect(try await client.next() == ["op": "subscribed", "id": 3, "kind": "subject", "epoch": epoch, "offset": 3, "recovered": false])
            #expect(try await client.values(3, id: 3) == [change("a", 0), change("b", 1), change("c", 2)])
            // Another epoch: the snapshot too.
            try await client.send(json(["op": "subscribe", "id": 4, "to": "t", "demand": 10, "since": ["offset": 3, "epoch": "other"]]))
            #expect(try await client.next()["recovered"] == false)
            #expect(try await client.values(3, id: 4).count == 3)
            await client.expectNothing()
        }
    }

    @Test("values that are not changes are invalid_value; keys and bytes beyond the bounds are limit_exceeded")
    func refusalsAndBounds() async throws {
        try await withServer(serviceConfiguration(), setUp: declare) { server in
            let client = try await server.connect()
            let bad: [Value] = [
                1, "AAPL", ["key": "a"], ["value": 1], ["key": true, "value": 1], ["key": 1.5, "value": 1],
                ["key": "a", "value": 1, "extra": 2], ["key": .string(String(repeating: "k", count: 1025)), "value": 1],
            ]
            for (index, value) in bad.enumerated() {
                let answer = try await send(client, value, ack: Int64(index + 1))
                #expect(answer["op"] == "error", "\(value)")
                #expect(answer["code"] == "invalid_value", "\(value): \(answer)")
                #expect(answer["data"]?["table"] == "positions")
            }
            for (index, key) in ["a", "b", "c"].enumerated() {
                #expect(try await send(client, change(key, 1), ack: Int64(100 + index))["op"] == "ack")
            }
            let fourth = try await send(client, change("d", 1), ack: 200)
            #expect(fourth["code"] == "limit_exceeded")
            #expect(fourth["data"]?["limit"] == "maxKeys")
            // Updates of live keys are taken; a delete frees room.
            #expect(try await send(client, change("a", 2), ack: 201)["op"] == "ack")
            #expect(try await send(client, change("b", .null), ack: 202)["op"] == "ack")
            #expect(try await send(client, change("d", 1), ack: 203)["op"] == "ack")
            let large = try await send(client, change("a", .string(String(repeating: "x", count: 5000))), ack: 204)
            #expect(large["code"] == "limit_exceeded")
            #expect(large["data"]?["limit"] == "maxBytes")
            // An update counts the bytes it gives back: two 3,000-byte values in turn fit 4,096.
            #expect(try await send(client, change("a", .string(String(repeating: "y", count: 3000))), ack: 205)["op"] == "ack")
            #expect(try await send(client, change("a", .string(String(repeating: "z", count: 3000))), ack: 206)["op"] == "ack")
            #expect(try await send(client, change("c", .string(String(repeating: "w", count: 3000))), ack: 207)["code"] == "limit_exceeded")
            let count = try await server.withHub { hub in (try hub.subject(named: "positions")).table?.count }
            #expect(count == 3)
        }
    }

    @Test("get reads one key: found with its offset, not found, a subject that is no table, a bad key")
    func getOneKey() async throws {
        try await withServer(serviceConfiguration(), setUp: declare) { server in
            let client = try await server.connect()
            #expect(try await send(client, change("AAPL", ["qty": 3]), ack: 1)["op"] == "ack")
            #expect(try await send(client, change("42", "answer"), ack: 2)["op"] == "ack")
            try await client.send(json(["op": "get", "name": "positions", "key": "AAPL", "ack": 3]))
            #expect(try await client.next() == ["op": "entry", "ack": 3, "key": "AAPL", "found": true, "value": ["qty": 3], "offset": 1])
            try await client.send(json(["op": "get", "name": "positions", "key": 42, "ack": 4]))
            #expect(try await client.next() == ["op": "entry", "ack": 4, "key": 42, "found": true, "value": "answer", "offset": 2])
            try await client.send(json(["op": "get", "name": "positions", "key": "MSFT", "ack": 5]))
            #expect(try await client.next() == ["op": "entry", "ack": 5, "key": "MSFT", "found": false])
            try await client.send(json(["op": "get", "name": "plain", "key": "a", "ack": 6]))
            let plain = try await client.next()
            #expect(plain["code"] == "not_found")
            #expect(plain["ack"] == 6)
            try await client.send(json(["op": "get", "name": "positions", "key": ["a"], "ack": 7]))
            let badKey = try await client.next()
            #expect(badKey["code"] == "bad_message")
            #expect(badKey["ack"] == 7)
            try await client.send(json(["op": "get", "name": "positions", "key": "a"]))
            #expect(try await client.next()["code"] == "bad_message")
        }
    }

    @Test("groupBy into a table keeps the latest aggregate per key; lookup reads the table")
    func pipelinesIntoAndFromATable() async throws {
        try await withServer(serviceConfiguration(), setUp: { hub in
            try hub.declareSubject("positions", table: SubjectTable.Limits())
            try hub.declarePipeline("book", source: "trades | groupBy(.symbol, scan(0, $acc + .qty)) | into(positions)", runs: true)
            try hub.declarePipeline(
                "priced", source: "orders | lookup(positions, on: .symbol, otherOn: .key, value: .value)")
            try hub.startRunningPipelines()
        }) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "priced", "demand": 10]))
            #expect(try await client.next()["op"] == "subscribed")
            let trades: [(String, Int64)] = [("AAPL", 10), ("MSFT", 5), ("AAPL", -3)]
            for (index, trade) in trades.enumerated() {
                let message: Value = ["op": "send", "to": "trades", "value": ["symbol": .string(trade.0), "qty": .int(trade.1)], "ack": .int(Int64(index + 1))]
                try await client.send(json(message))
                #expect(try await client.next()["op"] == "ack")
            }
            #expect(try await server.eventually { hub in
                (try? hub.lookup("AAPL", inTable: "positions"))??.value == 7
            })
            try await client.send(json(["op": "get", "name": "positions", "key": "MSFT", "ack": 10]))
            #expect(try await client.next()["value"] == 5)
            try await client.send(json(["op": "send", "to": "orders", "value": ["symbol": "AAPL", "n": 1], "ack": 11]))
            var answers = try await client.next(2)
            answers.sort { ($0["op"]?.stringValue ?? "") < ($1["op"]?.stringValue ?? "") }
            #expect(answers[0] == ["op": "ack", "ack": 11])
            #expect(answers[1] == ["op": "next", "id": 1, "value": [["symbol": "AAPL", "n": 1], 7]])
        }
    }

    @Test("a durable table survives restarts whole; the store keeps one row per key, not per update")
    func durableTable() async throws {
        let directory = NSTemporaryDirectory() + "hub-table-tests-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = serviceConfiguration()
        configuration.storage = SQLiteStorage(path: directory, sync: .full)
        let setUp: @Sendable (Hub) throws -> Void = { hub in
            try hub.declareSubject("t", history: HistoryRetention(size: 10), durable: true, table: SubjectTable.Limits())
        }
        var epoch: Value = .null
        try await withServer(configuration, setUp: setUp) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "t", "demand": 0]))
            epoch = try await client.next()["epoch"] ?? .null
            try await client.send(json(["op": "cancel", "id": 1]))
            var messages: [String] = []
            for round in 1...50 {
                for key in 0..<20 {
                    messages.append(json(["op": "send", "to": "t", "value": ["key": .int(Int64(key)), "value": .int(Int64(round))]]))
                }
            }
            for key in 0..<5 { messages.append(json(["op": "send", "to": "t", "value": ["key": .int(Int64(key)), "value": .null]])) }
            messages.append(json(["op": "send", "to": "t", "value": ["key": "last", "value": "x"], "ack": 1]))
            try await client.send(messages)
            let acked = try await client.next()
            #expect(acked == ["op": "ack", "ack": 1], "\(acked)")
        }
        // One row per live key, and the changelog bounded by its history.
        #expect(try Self.count("SELECT count(*) FROM table_rows", in: directory) == 16)
        #expect(try Self.count("SELECT sum(count) FROM entries", in: directory) <= 10 + 256)
        try await withServer(configuration, setUp: setUp) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "t", "demand": 100]))
            let subscribed = try await client.next()
            #expect(subscribed["epoch"] == epoch)
            #expect(subscribed["offset"] == 1006)
            let snapshot = try await client.values(16, id: 1)
            var expected: [Value] = (5..<20).map { change(String($0), 50) }
            expected.append(change("last", "x"))
            #expect(snapshot == expected)
            try await client.send(json(["op": "get", "name": "t", "key": 19, "ack": 2]))
            #expect(try await client.next() == ["op": "entry", "ack": 2, "key": 19, "found": true, "value": 50, "offset": 1000])
            try await client.send(json(["op": "get", "name": "t", "key": 0, "ack": 3]))
            #expect(try await client.next()["found"] == false)
            // Offsets go on; a resume by offset gets the changes only.
            try await client.send(json(["op": "send", "to": "t", "value": ["key": "next", "value": 1], "ack": 4]))
            #expect(try await client.next() == ["op": "ack", "ack": 4])
            #expect(try await client.values(1, id: 1) == [change("next", 1)])
            try await client.send(json(["op": "subscribe", "id": 2, "to": "t", "demand": 10, "since": ["offset": 1006, "epoch": epoch]]))
            #expect(try await client.next()["recovered"] == true)
            #expect(try await client.values(1, id: 2) == [change("next", 1)])
            // A delete starts the table over: its rows go with its history.
            try await client.send(json(["op": "delete", "name": "t", "ack": 5]))
            var answers = try await client.next(3)
            answers.sort { $0.jsonString() < $1.jsonString() }
            #expect(answers == [["op": "ack", "ack": 5], ["op": "complete", "id": 1], ["op": "complete", "id": 2]])
            try await client.send(json(["op": "get", "name": "t", "key": 19, "ack": 6]))
            #expect(try await client.next()["found"] == false)
        }
        #expect(try Self.count("SELECT count(*) FROM table_rows", in: directory) == 0)
    }

    @Test("a snapshot counts in the connection's memory budget: one that does not fit is limit_exceeded")
    func snapshotInTheBudget() async throws {
        var session = SessionConfiguration()
        session.connectionBudget.maxBytes = 64 << 10
        try await withServer(serviceConfiguration(session: session), setUp: { hub in
            try hub.declareSubject("big", history: HistoryRetention(size: 10), table: SubjectTable.Limits(maxKeys: 10_000))
            for key in 0..<5000 { try hub.send(["key": .int(Int64(key)), "value": 1], to: "big") }
        }) { server in
            let client = try await server.connect()
            // Refused as a subscription is: one error carrying its id, instead of subscribed.
            try await client.send(json(["op": "subscribe", "id": 1, "to": "big", "demand": 1]))
            let refused = try await client.next()
            #expect(refused["op"] == "error" && refused["id"] == 1)
            #expect(refused["code"] == "limit_exceeded", "\(refused)")
            // The budget is given back: a small table's snapshot still fits.
            try await server.withHub { hub in
                for key in 0..<4999 { try hub.send(["key": .int(Int64(key)), "value": .null], to: "big") }
            }
            try await client.send(json(["op": "subscribe", "id": 2, "to": "big", "demand": 5]))
            #expect(try await client.next()["op"] == "subscribed")
            #expect(try await client.values(1, id: 2) == [change("4999", 1)])
        }
    }

    /// The integer the query `sql` gives on the store's database in `directory`.
    static func count(_ sql: String, in directory: String) throws -> Int64 {
        var db: OpaquePointer?
        guard sqlite3_open_v2(directory + "/hub.sqlite3", &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else {
            throw UnexpectedEvent(description: "cannot open the store")
        }
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            throw UnexpectedEvent(description: "cannot prepare \(sql)")
        }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { throw UnexpectedEvent(description: "no row for \(sql)") }
        return sqlite3_column_int64(statement, 0)
    }
}
