import Foundation
import HubClient
import HubEngine
import HubRegistry
import HubServer
import HubSQLite
import HubTransport
import HubValue
import HubWire
import NetworkTestSupport
import RemoteTestSupport
import Testing

/// A subscription to a subject with history survives a lost connection: the client
/// subscribes again since the last offset it delivered, within the demand still unmet,
/// and its subscriber sees no gap, no duplicate and no failure.
@Suite("HubClient resume")
struct HubClientResumeTests {
    private static let policy = ReconnectPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200))

    /// A service whose subjects all keep a history (in memory), with `storage` for durable ones.
    private static func service(port: Int = 0, storage: String? = nil, durable: Bool = false) async throws -> (HubService, Int) {
        var configuration = HubService.Configuration(host: "127.0.0.1", port: port)
        configuration.hub.defaultHistory = HistoryRetention(size: 1000)
        if let storage { configuration.storage = SQLiteStorage(path: storage, sync: .full) }
        let service = try HubService(configuration: configuration)
        let bound = try await service.start { hub in
            if durable { try hub.declareSubject("orders", history: HistoryRetention(size: 1000), durable: true) }
        }
        return (service, bound)
    }

    @Test("a cut connection: values sent during the gap arrive after the reconnect, within demand, once each, in order")
    func resumesAfterACut() async throws {
        let (service, port) = try await Self.service()
        let relay = try TCPRelay(to: port)
        let direct = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration())
        let client = try await HubClient.connect(
            to: "ws://127.0.0.1:\(relay.port)/", configuration: testConfiguration(reconnect: Self.policy))
        let recorder = EntryRecorder(demand: .max(3))
        client.subscribe(to: "h").entries.subscribe(recorder)
        try await waitForSubscribers(1, of: "h", client: direct)
        for value in 1...3 { try await direct.send(.int(Int64(value)), to: "h") }
        #expect(try await recorder.entries(3).compactMap(\.offset) == [1, 2, 3])

        relay.isRefusing = true
        relay.cut()
        try await waitForSubscribers(0, of: "h", client: direct)
        for value in 4...10 { try await direct.send(.int(Int64(value)), to: "h") }
        relay.isRefusing = false

        // The demand still unmet was 0: the resumed subscription (counted as the subject's
        // subscriber while it replays) waits for more.
        try await waitForSubscribers(1, of: "h", client: direct)
        #expect(recorder.events.count == 0)
        recorder.request(.max(3))
        let resumed = try await recorder.entries(3)
        #expect(resumed.compactMap(\.offset) == [4, 5, 6])
        #expect(resumed.map(\.value) == [4, 5, 6])
        recorder.request(.unlimited)
        #expect(try await recorder.entries(4).compactMap(\.offset) == [7, 8, 9, 10])
        try await direct.send(11, to: "h")
        #expect(try await recorder.entries(1).compactMap(\.offset) == [11])
        #expect(await client.connectCount == 2)
        #expect(recorder.events.count == 0)

        await client.close()
        await direct.close()
        relay.stop()
        await service.shutdown()
    }

    @Test("values in flight when the connection drops are neither lost nor repeated")
    func resumesMidStream() async throws {
        let (service, port) = try await Self.service()
        let relay = try TCPRelay(to: port)
        let direct = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration())
        let client = try await HubClient.connect(
            to: "ws://127.0.0.1:\(relay.port)/", configuration: testConfiguration(reconnect: Self.policy))
        let recorder = EntryRecorder(demand: .unlimited)
        client.subscribe(to: "stream", options: SubscribeOptions(batch: true)).entries.subscribe(recorder)
        try await waitForSubscribers(1, of: "stream", client: direct)
        // Cut the network twice while 600 values flow.
        let sender = Task {
            for value in 1...600 {
                try await direct.send(.int(Int64(value)), to: "stream")
                if value == 200 || value == 400 { relay.cut() }
            }
        }
        // 600 acknowledged sends and two reconnects: a loaded CI machine needs more than
        // the default 15 s (a hang guard, not a speed test).
        let received = try await recorder.entries(600, timeout: .seconds(90))
        try await sender.value
        #expect(received.compactMap(\.offset) == (1...600).map(UInt64.init))
        #expect(received.map(\.value) == (1...600).map { Value.int(Int64($0)) })
        #expect(await client.connectCount >= 2)
        await client.close()
        await direct.close()
        relay.stop()
        await service.shutdown()
    }

    @Test("without history a lost subscription fails, saying why it cannot resume")
    func noHistoryFails() async throws {
        let (service, bound) = try await startService()
        let relay = try TCPRelay(to: bound)
        let client = try await HubClient.connect(
            to: "ws://127.0.0.1:\(relay.port)/", configuration: testConfiguration(reconnect: Self.policy))
        let recorder = Recorder(demand: .unlimited)
        client.subscribe(to: "plain").subscribe(recorder)
        #expect(subscribers(of: "plain", in: try await client.list()) == 1)
        relay.cut()
        let error = try #require(try await recorder.events.next().failure)
        #expect(error.code == .disconnected)
        #expect(error.message.contains("keeps no history"))
        await client.close()
        relay.stop()
        await service.shutdown()
    }

    @Test("a durable subject resumes across a restart of the broker; a subject in memory fails with resume_failed")
    func restart() async throws {
        let directory = NSTemporaryDirectory() + "hub-resume-tests-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (first, port) = try await Self.service(storage: directory, durable: true)
        let client = try await HubClient.connect(
            to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration(reconnect: Self.policy))
        let durable = EntryRecorder(demand: .unlimited)
        client.subscribe(to: "orders").entries.subscribe(durable)
        let memory = EntryRecorder(demand: .unlimited)
        client.subscribe(to: "scratch").entries.subscribe(memory)
        try await waitForSubscribers(1, of: "orders", client: client)
        try await waitForSubscribers(1, of: "scratch", client: client)
        for value in 1...3 { try await client.send(.int(Int64(value)), to: "orders") }
        try await client.send("a", to: "scratch")
        let before = try await durable.entries(3)
        #expect(before.compactMap(\.offset) == [1, 2, 3])
        #expect(try await memory.entries(1).compactMap(\.offset) == [1])

        await first.shutdown()
        // The freed port may be taken for a moment by another test's socket (the kernel
        // hands out ephemeral ports from the same range): try again until it is free.
        var restarted: (HubService, Int)?
        for attempt in 1...100 {
            do {
                restarted = try await Self.service(port: port, storage: directory, durable: true)
                break
            } catch let error as TransportError where error.code == .listenFailed && attempt < 100 {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let (second, samePort) = try #require(restarted)
        #expect(samePort == port)
        // The durable subscription resumed: the next values follow on.
        try await waitForSubscribers(1, of: "orders", client: client)
        try await client.send(4, to: "orders")
        #expect(try await durable.entries(1).compactMap(\.offset) == [4])
        // The subject in memory began a new epoch: what was published before is gone.
        guard case let .failed(error) = try await memory.events.next() else {
            Issue.record("the subscription to a subject in memory did not fail")
            return
        }
        #expect(error.code == .resumeFailed)
        #expect(error.message.contains("values were missed"))
        #expect(durable.events.count == 0)
        await client.close()
        await second.shutdown()
    }

    @Test("since the last K, and since an offset of this epoch, through the client")
    func since() async throws {
        let (service, port) = try await Self.service()
        let client = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration())
        for value in 1...5 { try await client.send(.int(Int64(value)), to: "h") }
        let last = EntryRecorder(demand: .unlimited)
        client.subscribe(to: "h", options: SubscribeOptions(since: .last(2))).entries.subscribe(last)
        let entries = try await last.events.next(2)
        let offsets: [UInt64] = entries.compactMap { seen in
            guard case let .entry(entry) = seen else { return nil }
            return entry.offset
        }
        #expect(offsets == [4, 5])
        guard case let .entry(entry) = entries[0], let epoch = entry.epoch else {
            Issue.record("no epoch")
            return
        }
        let values = Recorder(demand: .unlimited)
        client.subscribe(to: "h", options: SubscribeOptions(since: .offset(3, epoch: epoch))).subscribe(values)
        #expect(try await values.events.next(2) == [.value(4), .value(5)])
        let gone = Recorder(demand: .unlimited)
        client.subscribe(to: "h", options: SubscribeOptions(since: .offset(3, epoch: "another"))).subscribe(gone)
        #expect(try await gone.events.next().failure?.code == .resumeFailed)
        await client.close()
        await service.shutdown()
    }
}
