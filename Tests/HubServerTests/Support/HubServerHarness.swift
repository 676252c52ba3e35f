import Foundation
import HubLoop
import Synchronization
import NetworkTestSupport
import HubRegistry
import HubValue
import HubServer
import HubTransport
import Logging
import Testing

/// What a test client sees of its connection.
enum ClientEvent: Sendable {
    case open
    case message(WebSocketMessageKind, [UInt8])
    case closed(UInt16?)
    case failed
}

/// Records every event of one client connection into a queue.
final class ClientRecorder: WebSocketConnectionHandler {
    let events: EventQueue<ClientEvent>

    init(_ events: EventQueue<ClientEvent>) { self.events = events }

    func connectionDidOpen(_ connection: WebSocketConnection) { events.push(.open) }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        events.push(.message(kind, Array(payload)))
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        events.push(.closed(code?.rawValue))
    }

    func connection(_ connection: WebSocketConnection, didFailToConnect error: TransportError) {
        events.push(.failed)
    }
}

/// An unexpected event where a test waited for a message.
struct UnexpectedEvent: Error, CustomStringConvertible {
    var description: String
}

/// The default wait for anything the server should do at once.
let quick: Duration = .seconds(10)

/// A HubService on 127.0.0.1, an ephemeral port, and a client event loop for the test's connections.
final class HubServerHarness: Sendable {
    let service: HubService
    let port: Int
    let clientLoop: EventLoop

    /// Starts a service with `configuration` (its port is forced to 0), logging to
    /// `logger` (a ``LogRecorder``'s, for tests of the logs).
    /// `onTheHubLoopOnly` keeps every connection on the hub's loop even under
    /// `HUB_TEST_EVENT_LOOPS`, for a test whose premise is one pass of that loop.
    init(
        _ configuration: HubService.Configuration = HubService.Configuration(),
        logger: Logger = Logger(label: "hub.service"),
        onTheHubLoopOnly: Bool = false,
        setUp: @Sendable @escaping (Hub) throws -> Void = { _ in }
    ) async throws {
        var configuration = configuration
        configuration.host = "127.0.0.1"
        configuration.port = 0
        // HUB_TEST_EVENT_LOOPS=N runs the tests that do not choose their loops on N.
        if configuration.eventLoops == 1, !onTheHubLoopOnly,
            let loops = ProcessInfo.processInfo.environment["HUB_TEST_EVENT_LOOPS"].flatMap(Int.init)
        {
            configuration.eventLoops = loops
        }
        service = try HubService(configuration: configuration, logger: logger)
        port = try await service.start(setUp: setUp)
        clientLoop = try EventLoop(configuration: .init(name: "test-clients"))
    }

    /// Stops the service and the client loop.
    func stop() async {
        await service.shutdown(grace: .seconds(2))
        clientLoop.shutdown()
    }

    /// Runs `body` on the client loop.
    func onClientLoop<T: Sendable>(_ body: @Sendable @escaping () throws -> T) async throws -> T {
        try await clientLoop.submit(body)
    }

    /// Opens a client connection; unless `welcome` is false, waits for the open event and `welcome`.
    func connect(
        subprotocol: String? = "hub.v1", authorization: String? = nil,
        configuration: WebSocketClient.Configuration = WebSocketClient.Configuration(),
        welcome: Bool = true
    ) async throws -> TestClient {
        let events = EventQueue<ClientEvent>()
        let port = self.port
        let loop = clientLoop
        let connection = try await clientLoop.submit {
            let client = WebSocketClient(eventLoop: loop, configuration: configuration)
            let connection = client.connect(
                host: "127.0.0.1", port: port, subprotocol: subprotocol, authorization: authorization,
                handler: ClientRecorder(events))
            return LoopBound(connection, eventLoop: loop)
        }
        let client = TestClient(connection: connection, events: events, loop: clientLoop)
        if welcome {
            try await client.expectOpen()
            let message = try await client.next()
            guard message["op"] == "welcome" else { throw UnexpectedEvent(description: "expected welcome, got \(message)") }
            client.welcome = message
        }
        return client
    }

    /// Runs `body` with the hub on the service's loop.
    func withHub<T: Sendable>(_ body: @Sendable @escaping (Hub) throws -> T) async throws -> T {
        try await service.withHub(body)
    }

    /// Polls `condition` on the hub until it holds or `timeout` passes; returns whether it held.
    func eventually(
        timeout: Duration = quick, _ condition: @Sendable @escaping (Hub) -> Bool
    ) async throws -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            if try await withHub(condition) { return true }
            if clock.now >= deadline { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Polls `condition` on the service statistics until it holds or `timeout` passes.
    func eventuallyStatistics(
        timeout: Duration = quick, _ condition: @Sendable @escaping (HubService.Statistics) -> Bool
    ) async throws -> HubService.Statistics {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            let statistics = await service.statistics
            if condition(statistics) || clock.now >= deadline { return statistics }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The subscriber count of subject `name` (0 when it does not exist).
    func subscribers(of name: String) async throws -> Int {
        try await withHub { hub in hub.entry(named: name)?.subscriberCount ?? 0 }
    }
}

/// One raw WebSocket client of the hub: sends JSON text, awaits messages with timeouts.
final class TestClient: @unchecked Sendable {
    let connection: LoopBound<WebSocketConnection>
    let events: EventQueue<ClientEvent>
    let loop: EventLoop
    /// The `welcome` message (null until received).
    var welcome: Value = .null

    init(connection: LoopBound<WebSocketConnection>, events: EventQueue<ClientEvent>, loop: EventLoop) {
        self.connection = connection
        self.events = events
        self.loop = loop
    }

    /// Runs `body` with the connection on the client loop.
    func withConnection<T: Sendable>(_ body: @Sendable @escaping (WebSocketConnection) -> T) async throws -> T {
        let connection = self.connection
        return try await loop.submit { body(connection.value) }
    }

    /// Waits for the open event.
    func expectOpen(timeout: Duration = quick) async throws {
        let event = try await events.next(timeout: timeout, "the connection to open")
        guard case .open = event else { throw UnexpectedEvent(description: "expected open, got \(event)") }
    }

    /// Sends each text as one message, in one turn of the client loop.
    func send(_ texts: String...) async throws {
        try await send(texts)
    }

    /// Sends each text as one message, in one turn of the client loop.
    func send(_ texts: [String]) async throws {
        let ok = try await withConnection { connection in
            texts.allSatisfy { connection.send(text: $0) }
        }
        guard ok else { throw UnexpectedEvent(description: "the connection refused to send") }
    }

    /// Sends `value` as JSON.
    func send(_ value: Value) async throws {
        try await send(value.jsonString())
    }

    /// The next event, whatever it is.
    func nextEvent(timeout: Duration = quick) async throws -> ClientEvent {
        try await events.next(timeout: timeout, "a server event")
    }

    /// The next message, parsed; throws on a close or a timeout.
    func next(timeout: Duration = quick) async throws -> Value {
        let event = try await events.next(timeout: timeout, "a server message")
        guard case .message(let kind, let bytes) = event else {
            throw UnexpectedEvent(description: "expected a message, got \(event)")
        }
        guard kind == .text else { throw UnexpectedEvent(description: "expected a text message, got binary") }
        return try Value.parse(bytes)
    }

    /// The next `count` messages.
    func next(_ count: Int, timeout: Duration = quick) async throws -> [Value] {
        var result: [Value] = []
        for _ in 0..<count { result.append(try await next(timeout: timeout)) }
        return result
    }

    /// Values of `next` messages for subscription `id` until `count` values arrived
    /// (a `values` batch counts each element). Any other message fails.
    func values(_ count: Int, id: Int64, timeout: Duration = quick) async throws -> [Value] {
        var result: [Value] = []
        while result.count < count {
            let message = try await next(timeout: timeout)
            guard message["op"] == "next", message["id"] == .int(id) else {
                throw UnexpectedEvent(description: "expected next for \(id), got \(message)")
            }
            if let value = message["value"] {
                result.append(value)
            } else if let values = message["values"]?.arrayValue {
                result.append(contentsOf: values)
            }
        }
        return result
    }

    /// Acks of the marker `list`s ``expectNothing(sourceLocation:)`` sends (negative, so
    /// that they never meet a test's own acks).
    private let markers = Mutex<Int64>(-1_000_000)

    /// Checks that nothing is queued for this client, deterministically: sends a `list`
    /// with a marker ack and expects its `catalog` as the very next message. The server
    /// handles a connection's messages in order, and everything that the earlier ones
    /// (or the hub operations the test awaited) queued for this connection is written
    /// before that answer, so anything else arriving first is a failure; no window of
    /// silence is waited out.
    func expectNothing(sourceLocation: SourceLocation = #_sourceLocation) async {
        let ack = markers.withLock { value -> Int64 in
            value -= 1
            return value
        }
        do {
            try await send(json(["op": "list", "ack": .int(ack)]))
            let event = try await events.next(timeout: quick, "the marker's catalog")
            if case .message(.text, let bytes) = event, let answer = try? Value.parse(bytes),
               answer["op"] == "catalog", answer["ack"] == .int(ack) {
                return
            }
            Issue.record("expected nothing before the marker's catalog, got \(describe(event))", sourceLocation: sourceLocation)
        } catch {
            Issue.record("the marker's catalog did not come: \(error)", sourceLocation: sourceLocation)
        }
    }

    /// Skips messages until the close event; returns its code.
    @discardableResult
    func expectClose(timeout: Duration = quick) async throws -> (code: UInt16?, skipped: [Value]) {
        var skipped: [Value] = []
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { throw TimedOut(what: "the close, skipped \(skipped.count) messages") }
            switch try await events.next(timeout: left, "the close") {
            case .closed(let code): return (code, skipped)
            case .message(_, let bytes): skipped.append((try? Value.parse(bytes)) ?? .string("<unparsable>"))
            case .failed: throw UnexpectedEvent(description: "the connection failed")
            case .open: continue
            }
        }
    }

    /// Closes the connection with `code`.
    func close(code: UInt16 = 1000) async throws {
        try await withConnection { $0.close(code: WebSocketCloseCode(code), reason: "test") }
    }

    /// Drops the TCP connection without a close handshake.
    func abort() async throws {
        try await withConnection { $0.abort() }
    }

    func describe(_ event: ClientEvent) -> String {
        switch event {
        case .message(_, let bytes): return String(decoding: bytes.prefix(300), as: UTF8.self)
        default: return "\(event)"
        }
    }
}

/// A JSON message from a Swift literal, for brevity: `json(["op": "send", ...])`.
func json(_ value: Value) -> String { value.jsonString() }

/// Runs `body` against a fresh service, stopping it afterwards even when `body` throws.
func withServer(
    _ configuration: HubService.Configuration = HubService.Configuration(),
    logger: Logger = Logger(label: "hub.service"),
    onTheHubLoopOnly: Bool = false,
    setUp: @Sendable @escaping (Hub) throws -> Void = { _ in },
    _ body: (HubServerHarness) async throws -> Void
) async throws {
    let harness = try await HubServerHarness(configuration, logger: logger, onTheHubLoopOnly: onTheHubLoopOnly, setUp: setUp)
    do {
        try await body(harness)
    } catch {
        await harness.stop()
        throw error
    }
    await harness.stop()
}

/// A service configuration with the given session and hub settings.
func serviceConfiguration(
    hub: Hub.Configuration = Hub.Configuration(), session: SessionConfiguration = SessionConfiguration(),
    maxMessageSize: Int = 1 << 20, maxConnections: Int = 10_000
) -> HubService.Configuration {
    HubService.Configuration(
        host: "127.0.0.1", port: 0, hub: hub, session: session, maxMessageSize: maxMessageSize,
        maxConnections: maxConnections)
}
