import Foundation
import HubClient
import HubEngine
import HubTransport
import HubValue
import HubWire
import NetworkTestSupport
import Synchronization
import Testing

/// History through real `hubcli` processes: `subscribe --since/--last/--offsets`,
/// `--reconnect` resuming across broker restarts (a clean stop and `kill -9`), and
/// `kill -9` of a broker during an acknowledged publish burst: after the restart every
/// acknowledged value is stored, in order, exactly once.
@Suite("hubcli history and durability")
struct HubCLIHistoryTests {
    static let clean = HubCLIShellTests.clean

    /// A configuration file in a fresh folder; returns its path and the folder.
    static func config(_ text: String) throws -> (path: String, folder: URL) {
        let folder = try HubCLIShellTests.scratch()
        let file = folder.appendingPathComponent("hub.yml")
        try text.write(to: file, atomically: true, encoding: .utf8)
        return (file.path, folder)
    }

    @Test func sinceLastAndOffsets() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let (file, folder) = try Self.config("defaults: {history: {size: 100}}\n")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (server, port) = try await HubCLIShellTests.broker(hubcli, config: file)
        defer { server.process.terminate() }
        let url = "ws://127.0.0.1:\(port)"
        let client = try await HubClient.connect(to: url + "/", configuration: testConfiguration())
        for value in 1...5 { try await client.send(.int(Int64(value * 10)), to: "h") }
        await client.close()

        let last = try await run(hubcli, ["subscribe", "h", "--last", "2", "--count", "2", "--offsets", "--url", url], environment: Self.clean)
        #expect(last.status == 0, "\(last.stderr)")
        #expect(last.stdout == "4 40\n5 50\n")
        let epochLine = try #require(last.stderr.split(separator: "\n").first { $0.contains("epoch") })
        let epoch = try #require(epochLine.split(separator: " ").drop { $0 != "epoch" }.dropFirst().first)

        let since = try await run(hubcli, ["subscribe", "h", "--since", "3", "--count", "2", "--url", url], environment: Self.clean)
        #expect(since.status == 0, "\(since.stderr)")
        #expect(since.stdout == "40\n50\n")
        let withEpoch = try await run(
            hubcli, ["subscribe", "h", "--since", "4@\(epoch)", "--count", "1", "--url", url], environment: Self.clean)
        #expect(withEpoch.stdout == "50\n", "\(withEpoch.stderr)")

        let otherEpoch = try await run(hubcli, ["subscribe", "h", "--since", "4@nope", "--url", url], environment: Self.clean)
        #expect(otherEpoch.status == 3)
        #expect(otherEpoch.stderr.contains("resume_failed"), "\(otherEpoch.stderr)")
        #expect(otherEpoch.stderr.contains("values were missed"))

        let plain = try await run(
            hubcli, ["subscribe", "--pipeline", "sequence([7])", "--offsets", "--count", "1", "--url", url], environment: Self.clean)
        #expect(plain.stdout == "- 7\n", "\(plain.stderr)")

        for (arguments, message) in [
            (["--since", "x"], "--since must be OFFSET or OFFSET@EPOCH"),
            (["--since", "1@"], "--since must be OFFSET or OFFSET@EPOCH"),
            (["--since", "1", "--last", "2"], "either --since or --last"),
            (["--last=-1"], "--last must be at least 0"),
        ] {
            let refused = try await run(hubcli, ["subscribe", "h"] + arguments + ["--url", url], environment: Self.clean)
            #expect(refused.status == 64, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains(message), "\(arguments): \(refused.stderr)")
        }
        let pipelineSince = try await run(hubcli, ["subscribe", "--pipeline", "h", "--last", "2", "--url", url], environment: Self.clean)
        #expect(pipelineSince.status == 64)
        #expect(pipelineSince.stderr.contains("--since and --last need a subject"))
    }

    @Test func reconnectResumesADurableSubjectAcrossRestartsKill9Included() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let (file, folder) = try Self.config("""
            storage: {path: data}
            subjects:
              orders: {durable: true, history: {size: 1000}}
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        var (server, port) = try await HubCLIShellTests.broker(hubcli, config: file)
        let url = "ws://127.0.0.1:\(port)"
        let subscriber = try RunningProcess(
            hubcli, ["subscribe", "orders", "--reconnect", "--offsets", "--count", "6", "--url", url], environment: Self.clean)

        var publisher = try await HubClient.connect(to: url + "/", configuration: testConfiguration())
        try await waitForSubscribers(1, of: "orders", client: publisher)
        for value in 1...2 { try await publisher.send(.int(Int64(value)), to: "orders") }
        await publisher.close()

        // A clean stop: the subscription ends with shutting_down and resumes after the restart.
        server.process.terminate()
        _ = try await server.finish()
        (server, _) = try await HubCLIShellTests.broker(hubcli, port: port, config: file)
        publisher = try await HubClient.connect(to: url + "/", configuration: testConfiguration())
        for value in 3...4 { try await publisher.send(.int(Int64(value)), to: "orders") }
        try await waitForSubscribers(1, of: "orders", client: publisher)
        await publisher.close()

        // kill -9: no goodbye at all; the values stored before are there after the restart.
        kill(server.process.processIdentifier, SIGKILL)
        _ = try await server.finish()
        (server, _) = try await HubCLIShellTests.broker(hubcli, port: port, config: file)
        defer { server.process.terminate() }
        publisher = try await HubClient.connect(to: url + "/", configuration: testConfiguration())
        for value in 5...6 { try await publisher.send(.int(Int64(value)), to: "orders") }
        await publisher.close()

        let result = try await subscriber.finish(timeout: .seconds(60))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "1 1\n2 2\n3 3\n4 4\n5 5\n6 6\n", "\(result.stderr)")
        #expect(!result.stderr.contains("missed"), "\(result.stderr)")
    }

    @Test func reconnectOnASubjectInMemorySaysValuesWereMissedAndGoesOn() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let (file, folder) = try Self.config("subjects:\n  news: {history: {size: 100}}\n")
        defer { try? FileManager.default.removeItem(at: folder) }
        var (server, port) = try await HubCLIShellTests.broker(hubcli, config: file)
        let url = "ws://127.0.0.1:\(port)"
        let subscriber = try RunningProcess(
            hubcli, ["subscribe", "news", "--reconnect", "--count", "2", "--url", url], environment: Self.clean)
        var publisher = try await HubClient.connect(to: url + "/", configuration: testConfiguration())
        try await waitForSubscribers(1, of: "news", client: publisher)
        try await publisher.send("before", to: "news")
        await publisher.close()
        server.process.terminate()
        _ = try await server.finish()
        (server, _) = try await HubCLIShellTests.broker(hubcli, port: port, config: file)
        defer { server.process.terminate() }
        try await subscriber.waitForStderr(containing: "going on with the values from now")
        publisher = try await HubClient.connect(to: url + "/", configuration: testConfiguration())
        try await waitForSubscribers(1, of: "news", client: publisher)
        try await publisher.send("after", to: "news")
        await publisher.close()
        let result = try await subscriber.finish()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "\"before\"\n\"after\"\n")
        #expect(result.stderr.contains("resume_failed"))
    }

    /// Publishes 1...count into `subject` over one connection with up to `window` acks
    /// outstanding, in order; calls `onAck` (on the client loop) with each ack.
    final class BurstPublisher: WebSocketConnectionHandler, @unchecked Sendable {
        let subject: String
        let count: Int
        let window: Int
        private var next = 1
        private var connection: WebSocketConnection?
        private let onAck: (Int64) -> Void
        let closed = EventQueue<Bool>()

        init(subject: String, count: Int, window: Int, onAck: @escaping (Int64) -> Void) {
            self.subject = subject
            self.count = count
            self.window = window
            self.onAck = onAck
        }

        func connectionDidOpen(_ connection: WebSocketConnection) {
            self.connection = connection
        }

        func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
            guard let message = try? ServerMessage.decode(payload) else { return }
            switch message {
            case .welcome:
                while next <= min(window, count) { sendNext() }
            case let .ack(ack):
                onAck(ack)
                if next <= count { sendNext() }
            default:
                break
            }
        }

        private func sendNext() {
            let message = ClientMessage.send(to: subject, value: .int(Int64(next)), ack: Int64(next))
            _ = connection?.sendFrame(kind: .text) { message.encode(into: &$0) }
            next += 1
        }

        func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
            closed.push(true)
        }

        func connection(_ connection: WebSocketConnection, didFailToConnect error: TransportError) {
            closed.push(false)
        }
    }

    /// Window 256 keeps the writer thread committing groups; window 1 with `normal` has
    /// the broker's loop commit each lone value itself.
    @Test(arguments: [("full", 256), ("normal", 256), ("normal", 1)])
    func kill9DuringAnAcknowledgedBurstLosesNothingAcknowledged(sync: String, window: Int) async throws {
        let hubcli = try HubCLIExecutable.locate()
        let (file, folder) = try Self.config("""
            storage: {path: data, sync: \(sync)}
            subjects:
              burst: {durable: true, history: {size: 100000}}
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        var (server, port) = try await HubCLIShellTests.broker(hubcli, config: file)
        let pid = server.process.processIdentifier

        // Acks are recorded on the client loop; at the 1500th the broker is killed.
        let acked = Mutex<[Int64]>([])
        let killAt = 1500
        let loop = try EventLoop(configuration: .init(name: "burst"))
        defer { loop.shutdown() }
        let publisher = BurstPublisher(subject: "burst", count: 20_000, window: window) { ack in
            let count = acked.withLock { list -> Int in
                list.append(ack)
                return list.count
            }
            if count == killAt { kill(pid, SIGKILL) }
        }
        let firstPort = port
        try await loop.submit {
            let client = WebSocketClient(eventLoop: loop)
            _ = client.connect(host: "127.0.0.1", port: firstPort, subprotocol: HubProtocol.subprotocol, handler: publisher)
        }
        _ = try await publisher.closed.next(timeout: .seconds(120), "the broker's end")
        _ = try await server.finish()
        let acks = acked.withLock { $0 }
        #expect(acks.count >= killAt)
        #expect(acks == (1...Int64(acks.count)).map { $0 }, "acks come in order")
        let highest = acks.last ?? 0

        (server, port) = try await HubCLIShellTests.broker(hubcli, port: 0, config: file)
        defer { server.process.terminate() }
        let url = "ws://127.0.0.1:\(port)/"
        let client = try await HubClient.connect(to: url, configuration: testConfiguration())
        try await client.send("end", to: "burst")
        var stored: [HubEntry] = []
        for try await entry in StoredEntries(client: client, subject: "burst") {
            if entry.value == "end" { break }
            stored.append(entry)
        }
        await client.close()
        // The log is 1, 2, 3… with each value at its own offset: nothing acknowledged is
        // missing, nothing is there twice, and nothing unacknowledged jumped ahead.
        let values = stored.compactMap(\.value.intValue)
        #expect(values.count == stored.count)
        #expect(values == Array(1...Int64(max(1, values.count))).prefix(values.count).map { $0 })
        #expect(stored.map(\.offset) == values.map { UInt64($0) })
        #expect(Int64(values.count) >= highest, "acknowledged up to \(highest), stored \(values.count)")
    }
}

/// Every entry of `subject` from its first offset, as an async sequence.
struct StoredEntries: AsyncSequence {
    typealias Element = HubEntry
    let client: HubClient
    let subject: String

    func makeAsyncIterator() -> AsyncStream<HubEntry>.Iterator {
        let (stream, continuation) = AsyncStream<HubEntry>.makeStream()
        let sink = EntrySink(continuation)
        client.subscribe(to: subject, options: SubscribeOptions(since: .offset(0, epoch: nil))).entries.subscribe(sink)
        return stream.makeAsyncIterator()
    }

    final class EntrySink: Subscriber, @unchecked Sendable {
        typealias Input = HubEntry
        typealias Failure = HubClientError
        let continuation: AsyncStream<HubEntry>.Continuation
        init(_ continuation: AsyncStream<HubEntry>.Continuation) { self.continuation = continuation }
        func receive(subscription: any Subscription) { subscription.request(.unlimited) }
        func receive(_ input: HubEntry) -> Subscribers.Demand {
            continuation.yield(input)
            return .none
        }
        func receive(completion: Subscribers.Completion<HubClientError>) { continuation.finish() }
    }
}
