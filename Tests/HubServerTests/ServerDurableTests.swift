import CSQLite
import Foundation
import HubRegistry
import HubServer
import HubSQLite
import HubTransport
import HubValue
import Testing

/// Durable subjects over the wire: what survives a restart of the service (history,
/// current value, epoch), what does not (a subject that is not durable begins a new
/// epoch), and a stuck disk that delays only the durable acks.
@Suite("HubServer durable subjects")
struct ServerDurableTests {
    private func temporaryDirectory() -> String {
        NSTemporaryDirectory() + "hub-durable-tests-" + UUID().uuidString
    }

    private func configuration(storage directory: String) -> HubService.Configuration {
        var configuration = serviceConfiguration()
        configuration.storage = SQLiteStorage(path: directory, sync: .full)
        return configuration
    }

    /// `orders` durable with history, `prices` durable current-value, `ticks` history in memory.
    private let declare: @Sendable (Hub) throws -> Void = { hub in
        try hub.declareSubject("orders", history: HistoryRetention(size: 100), durable: true)
        try hub.declareSubject("prices", initialValue: ["AAPL": 0], history: HistoryRetention(size: 5), durable: true)
        try hub.declareSubject("ticks", history: HistoryRetention(size: 100))
    }

    @Test("history, current value and epoch survive a restart; a subject in memory begins a new epoch")
    func restart() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var epochs: [String: Value] = [:]
        try await withServer(configuration(storage: directory), setUp: declare) { server in
            let client = try await server.connect()
            for name in ["orders", "prices", "ticks"] {
                try await client.send(json(["op": "subscribe", "id": .int(Int64(epochs.count + 1)), "to": .string(name)]))
                epochs[name] = try await client.next()["epoch"]
            }
            try await client.send((1...5).map { json(["op": "send", "to": "orders", "value": ["n": .int(Int64($0))], "ack": .int(Int64($0))]) })
            for ack in 1...5 { #expect(try await client.next() == ["op": "ack", "ack": .int(Int64(ack))]) }
            try await client.send(json(["op": "send", "to": "prices", "value": ["AAPL": 190.5], "ack": 6]))
            #expect(try await client.next() == ["op": "ack", "ack": 6])
            try await client.send(json(["op": "send", "to": "ticks", "value": 1, "ack": 7]))
            #expect(try await client.next() == ["op": "ack", "ack": 7])
        }
        try await withServer(configuration(storage: directory), setUp: declare) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "orders", "demand": 10, "since": ["offset": 2, "epoch": epochs["orders"]!]]))
            #expect(try await client.next() == ["op": "subscribed", "id": 1, "kind": "subject", "epoch": epochs["orders"]!, "offset": 5, "recovered": true])
            #expect(try await client.values(3, id: 1) == [["n": 3], ["n": 4], ["n": 5]])
            try await client.send(json(["op": "subscribe", "id": 2, "to": "prices", "demand": 1]))
            #expect(try await client.next()["epoch"] == epochs["prices"]!)
            #expect(try await client.next() == ["op": "next", "id": 2, "offset": 1, "value": ["AAPL": 190.5]])
            try await client.send(json(["op": "subscribe", "id": 3, "to": "ticks", "demand": 1, "since": ["offset": 0, "epoch": epochs["ticks"]!]]))
            let ticks = try await client.next()
            #expect(ticks["recovered"] == false)
            #expect(ticks["epoch"] != epochs["ticks"]!)
            #expect(ticks["offset"] == 0)
            // Offsets go on after the restart.
            try await client.send(json(["op": "send", "to": "orders", "value": ["n": 6], "ack": 8]))
            #expect(try await client.next() == ["op": "ack", "ack": 8])
            #expect(try await client.next() == ["op": "next", "id": 1, "offset": 6, "value": ["n": 6]])
            let catalog = try await server.withHub { hub in hub.catalog().subjects.first { $0.name == "prices" }?.value }
            #expect(catalog == ["AAPL": 190.5])
        }
    }

    @Test("a durable subject needs a store: declaring one without storage is refused")
    func durableNeedsStorage() async throws {
        try await withServer { server in
            let message = try await server.withHub { hub -> String? in
                do {
                    try hub.declareSubject("d", durable: true)
                    return nil
                } catch {
                    return "\(error)"
                }
            }
            #expect(message?.contains("storage.path") == true)
        }
    }

    /// Another connection holding the database's write lock: a disk that does not answer.
    private final class BlockingWriter: @unchecked Sendable {
        private var handle: OpaquePointer?

        init(path: String) throws {
            guard sqlite3_open(path, &handle) == SQLITE_OK,
                  sqlite3_exec(handle, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else {
                throw SQLiteError(code: -1, message: "cannot lock \(path)")
            }
        }

        func release() {
            sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            sqlite3_close(handle)
        }
    }

    @Test("a stuck disk delays the durable subject's acks, not the other subjects' subscribers")
    func stuckDisk() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withServer(configuration(storage: directory), setUp: declare) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "send", "to": "orders", "value": 0, "ack": 1]))
            #expect(try await client.next() == ["op": "ack", "ack": 1])
            try await client.send(json(["op": "subscribe", "id": 1, "to": "orders", "demand": "unlimited"]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send(json(["op": "subscribe", "id": 2, "to": "news", "demand": "unlimited"]))
            #expect(try await client.next()["op"] == "subscribed")

            let blocker = try BlockingWriter(path: directory + "/" + SQLiteStore.fileName)
            try await client.send(json(["op": "send", "to": "orders", "value": 1, "ack": 2]))
            // The loop serves everything else while the durable value waits for the disk.
            for index in 1...20 {
                try await client.send(json(["op": "send", "to": "news", "value": .int(Int64(index)), "ack": .int(Int64(100 + index))]))
                #expect(try await client.next() == ["op": "ack", "ack": .int(Int64(100 + index))])
                #expect(try await client.next() == ["op": "next", "id": 2, "value": .int(Int64(index))])
            }
            await client.expectNothing()
            blocker.release()
            #expect(try await client.next() == ["op": "ack", "ack": 2])
            #expect(try await client.next() == ["op": "next", "id": 1, "offset": 2, "value": 1])
        }
    }
}
