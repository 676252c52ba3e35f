import HubWire
import HubServer
import HubTransport
import Testing

/// A test's WebSocket client on the service's event loop: what it receives is
/// decoded and queued for the test to await.
final class TestClient: WebSocketConnectionHandler, @unchecked Sendable {
    // Touched on the event loop only (the queue is thread-safe).
    private var connection: WebSocketConnection?
    private let inbox: AsyncStream<String>.Continuation
    private var iterator: AsyncStream<String>.AsyncIterator
    private let eventLoop: EventLoop

    private init(eventLoop: EventLoop) {
        self.eventLoop = eventLoop
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        inbox = continuation
        iterator = stream.makeAsyncIterator()
    }

    /// Connects to `port` on loopback, presenting `token` if given, and waits for `welcome`.
    static func connect(_ eventLoop: EventLoop, port: Int, token: String?) async throws -> TestClient {
        let client = TestClient(eventLoop: eventLoop)
        try await eventLoop.submit {
            let transport = WebSocketClient(eventLoop: eventLoop)
            transport.connect(host: "127.0.0.1", port: port, authorization: token.map { "Bearer \($0)" }, handler: client)
        }
        guard case .welcome = try await client.next() else { throw TimedOutWaiting(what: "welcome") }
        return client
    }

    /// Sends `text` as one message.
    func send(_ text: String) async throws {
        try await eventLoop.submit { [self] in _ = connection?.send(text: text) }
    }

    /// The next message from the server, decoded; fails after 10 s.
    func next() async throws -> ServerMessage {
        let text = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask { [self] in await self.receiveText() }
            group.addTask {
                try await Task.sleep(for: .seconds(10))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let text else { throw TimedOutWaiting(what: "a message") }
        return try ServerMessage.decode(text)
    }

    private func receiveText() async -> String? {
        await iterator.next()
    }

    /// Closes the connection.
    func close() async throws {
        try await eventLoop.submit { [self] in connection?.close() }
    }

    func connectionDidOpen(_ connection: WebSocketConnection) {
        self.connection = connection
    }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        inbox.yield(String(decoding: payload, as: UTF8.self))
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        inbox.finish()
    }

    func connection(_ connection: WebSocketConnection, didFailToConnect error: TransportError) {
        inbox.finish()
    }
}

struct TimedOutWaiting: Error {
    var what: String
}

@Suite("Configured broker over WebSocket")
struct ConfiguredServiceTests {
    static let yaml = """
        listen: {host: 127.0.0.1, port: 0}
        autoCreate: false
        auth:
          tokens: [admin, viewer]
          timeout: 5s
        allowAdHocPipelines: [admin]
        subjects:
          orders:
        pipelines:
          big: orders | filter(.qty > 100)
          each: {source: "orders | map(.qty)", shared: false}
        """

    @Test func namedPipelinesOverARealSocket() async throws {
        let broker = try parseBroker(yaml: Self.yaml, file: "hub.yml")
        let service = try HubService(configuration: broker.service)
        let port = try await service.start { hub in try broker.declare(in: hub) }
        #expect(port > 0)

        let admin = try await TestClient.connect(service.eventLoop, port: port, token: "admin")
        try await admin.send(#"{"op":"subscribe","id":1,"to":"big","demand":10}"#)
        #expect(try await admin.next() == .subscribed(id: 1, kind: .pipeline))
        try await admin.send(#"{"op":"subscribe","id":2,"pipeline":"big | map(.qty)","demand":10}"#)
        #expect(try await admin.next() == .subscribed(id: 2, kind: .pipeline))
        try await admin.send(#"{"op":"subscribe","id":3,"to":"each","demand":1}"#)
        #expect(try await admin.next() == .subscribed(id: 3, kind: .pipeline))

        let viewer = try await TestClient.connect(service.eventLoop, port: port, token: "viewer")
        try await viewer.send(#"{"op":"subscribe","id":1,"pipeline":"orders"}"#)
        guard case .error(let forbidden, let id, _) = try await viewer.next() else {
            Issue.record("expected an error")
            return
        }
        #expect(forbidden.code == .forbidden && id == 1)
        try await viewer.send(#"{"op":"subscribe","id":2,"to":"big","demand":5}"#)
        #expect(try await viewer.next() == .subscribed(id: 2, kind: .pipeline))
        try await viewer.send(#"{"op":"send","to":"big","value":1,"ack":7}"#)
        guard case .error(let notFound, _, let ack) = try await viewer.next() else {
            Issue.record("expected an error")
            return
        }
        #expect(notFound.code == .notFound && ack == 7)
        #expect(notFound.message == "'big' is a pipeline, not a subject")

        try await admin.send(#"{"op":"send","to":"orders","value":{"qty":5},"ack":1}"#)
        #expect(try await admin.next() == .ack(1))
        #expect(try await admin.next() == .next(id: 3, value: 5))
        try await admin.send(#"{"op":"send","to":"orders","value":{"qty":500},"ack":2}"#)
        #expect(try await admin.next() == .ack(2))
        var received: Set<ServerMessage> = []
        for _ in 0..<2 { received.insert(try await admin.next()) }
        #expect(received == [.next(id: 1, value: ["qty": 500]), .next(id: 2, value: 500)])
        #expect(try await viewer.next() == .next(id: 2, value: ["qty": 500]))

        try await admin.send(#"{"op":"list","ack":3}"#)
        guard case .catalog(3, let catalog) = try await admin.next() else {
            Issue.record("expected the catalog")
            return
        }
        // big: the admin's direct and composed subscriptions and the viewer's; each: one.
        #expect(catalog.pipelines == [.init(name: "big", subscribers: 3), .init(name: "each", subscribers: 1)])
        #expect(catalog.subjects.map(\.name) == ["orders"])
        try await admin.close()
        try await viewer.close()
        await service.shutdown()
    }

    @Test func aPipelineThatDoesNotCompileStopsTheStart() async throws {
        let broker = try BrokerConfiguration.parse(
            yaml: "listen: {port: 0}\nautoCreate: false\npipelines:\n  p: \"ghost | map(.x)\"\n", file: "broken.yml")
        let service = try HubService(configuration: broker.service)
        do {
            _ = try await service.start { hub in try broker.declare(in: hub) }
            Issue.record("the service started")
        } catch let error as ConfigurationError {
            #expect(error.description == "broken.yml:4:7: pipelines.p: no subject named 'ghost'")
        }
        #expect(await service.port == 0)
        await service.shutdown(grace: .zero)
    }
}
