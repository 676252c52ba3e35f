import HubRegistry
import HubServer
import HubValue
import HubWire
import Logging
import NetworkTestSupport
import Synchronization
import Testing

/// The service knows its durable store only as a ``DurableStorage`` that opens a
/// ``SubjectStore``: a server runs on a store of the test's choosing, in memory, and on a
/// test double that records what the server asks of it.
@Suite("HubServer on a store it is given")
struct ServerStoreTests {
    /// `orders`: durable, with history.
    private let declare: @Sendable (Hub) throws -> Void = { hub in
        try hub.declareSubject("orders", history: HistoryRetention(size: 100), durable: true)
    }

    /// A service whose durable store is `storage`.
    private static func configuration(_ storage: RecordingStorage) -> HubService.Configuration {
        var configuration = serviceConfiguration()
        configuration.storage = storage
        return configuration
    }

    @Test("durable subjects on an in-memory store: acked sends, replay from an offset")
    func inMemoryStore() async throws {
        let storage = RecordingStorage()
        try await withServer(Self.configuration(storage), setUp: declare) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "orders"]))
            let epoch = try #require(try await client.next()["epoch"])
            try await client.send((1...3).map { json(["op": "send", "to": "orders", "value": ["n": .int(Int64($0))], "ack": .int(Int64($0))]) })
            for ack in 1...3 { #expect(try await client.next() == ["op": "ack", "ack": .int(Int64(ack))]) }

            let reader = try await server.connect()
            try await reader.send(json(["op": "subscribe", "id": 2, "to": "orders", "demand": 10, "since": ["offset": 1, "epoch": epoch]]))
            #expect(try await reader.next() == ["op": "subscribed", "id": 2, "kind": "subject", "epoch": epoch, "offset": 3, "recovered": true])
            #expect(try await reader.values(2, id: 2) == [["n": 2], ["n": 3]])
        }
        // The service opened the store once, on its loop's executor, and closed it when it stopped.
        let calls = storage.recorder.calls
        #expect(calls.first == "open")
        #expect(calls.filter { $0 == "open" }.count == 1)
        #expect(calls.contains("openLog orders"))
        #expect(calls.last == "close")
    }

    @Test("a delete removes the subject's log from the store")
    func deleteRemovesTheLog() async throws {
        let storage = RecordingStorage()
        try await withServer(Self.configuration(storage), setUp: declare) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "send", "to": "orders", "value": 1, "ack": 1]))
            #expect(try await client.next() == ["op": "ack", "ack": 1])
            try await client.send(json(["op": "delete", "name": "orders", "ack": 2]))
            #expect(try await client.next() == ["op": "ack", "ack": 2])
        }
        let calls = storage.recorder.calls
        let opened = try #require(calls.firstIndex(of: "openLog orders"))
        let removed = try #require(calls.firstIndex(of: "removeLog orders"))
        #expect(opened < removed)
    }

    @Test("/ready says the store is unavailable while it says so, and ready again after")
    func readinessAsksTheStore() async throws {
        let storage = RecordingStorage()
        try await withServer(Self.configuration(storage), setUp: declare) { server in
            #expect(try await HTTPTestClient.request(port: server.port, path: "/ready").status == 200)
            storage.recorder.unavailable = "the disk is full"
            let down = try await HTTPTestClient.request(port: server.port, path: "/ready")
            #expect(down.status == 503)
            #expect(down.text == "not ready: durable store: the disk is full\n")
            storage.recorder.unavailable = nil
            #expect(try await HTTPTestClient.request(port: server.port, path: "/ready").status == 200)
        }
        #expect(storage.recorder.calls.contains("unavailability"))
    }

    @Test("a store that cannot open keeps the service from starting, with its error")
    func aStoreThatCannotOpen() async throws {
        let storage = RecordingStorage()
        storage.recorder.openError = HubError(.storageUnavailable, "no such volume")
        await #expect(throws: HubError.self) {
            try await withServer(Self.configuration(storage), setUp: declare) { _ in }
        }
    }
}

/// What ``RecordingStore`` was asked, in order, and how it answers; shared between the
/// hub's loop and the test.
final class StoreRecorder: Sendable {
    private struct State {
        var calls: [String] = []
        var unavailable: String?
        var openError: HubError?
    }

    private let state = Mutex(State())

    /// The calls so far: `open`, `openLog NAME`, `removeLog NAME`, `unavailability`, `close`, …
    var calls: [String] { state.withLock { $0.calls } }
    /// What ``RecordingStore/unavailability()`` answers.
    var unavailable: String? {
        get { state.withLock { $0.unavailable } }
        set { state.withLock { $0.unavailable = newValue } }
    }
    /// What ``RecordingStorage/open(executor:logger:)`` throws, if anything.
    var openError: HubError? {
        get { state.withLock { $0.openError } }
        set { state.withLock { $0.openError = newValue } }
    }

    func record(_ call: String) { state.withLock { $0.calls.append(call) } }
}

/// A ``DurableStorage`` that opens a ``RecordingStore``.
struct RecordingStorage: DurableStorage {
    let recorder = StoreRecorder()

    func open(executor: any StoreExecutor, logger: Logger) throws -> any SubjectStore {
        recorder.record("open")
        if let error = recorder.openError { throw error }
        return RecordingStore(recorder: recorder)
    }
}

/// A ``SubjectStore`` that keeps its logs in a ``MemoryStore`` and records every call.
final class RecordingStore: SubjectStore {
    private let recorder: StoreRecorder
    private let memory = MemoryStore()

    init(recorder: StoreRecorder) { self.recorder = recorder }

    func openLog(subject name: String, retention: HistoryRetention) throws(HubError) -> any SubjectLog {
        recorder.record("openLog \(name)")
        return try memory.openLog(subject: name, retention: retention)
    }

    func removeLog(subject name: String) throws(HubError) {
        recorder.record("removeLog \(name)")
        try memory.removeLog(subject: name)
    }

    func close() { recorder.record("close") }

    func unavailability() -> String? {
        recorder.record("unavailability")
        return recorder.unavailable
    }

    func loadCheckpoint(pipeline: String, completion: @escaping (Result<Value?, HubError>) -> Void) {
        recorder.record("loadCheckpoint \(pipeline)")
        memory.loadCheckpoint(pipeline: pipeline, completion: completion)
    }

    func commit(
        checkpoint: Value, pipeline: String, appending body: () -> Void,
        completion: @escaping (Result<Void, HubError>) -> Void
    ) {
        recorder.record("commit \(pipeline)")
        memory.commit(checkpoint: checkpoint, pipeline: pipeline, appending: body, completion: completion)
    }
}
