import DequeModule
import HubLoop
import HubTransport
import Foundation
import NetworkTestSupport

/// What a test sees of one connection.
enum ConnectionEvent: Sendable, Equatable {
    case open
    case message(WebSocketMessageKind, [UInt8])
    case closed(UInt16?)
    case failed(TransportError.Code)

    static func text(_ string: String) -> ConnectionEvent { .message(.text, Array(string.utf8)) }
}

/// A connection handler that records every event into a queue, tagged with `tag`.
final class RecordingHandler: WebSocketConnectionHandler {
    let events: EventQueue<(Int, ConnectionEvent)>?
    let plain: EventQueue<ConnectionEvent>?
    let tag: Int

    init(_ events: EventQueue<ConnectionEvent>) {
        self.plain = events
        self.events = nil
        self.tag = 0
    }

    init(tagged events: EventQueue<(Int, ConnectionEvent)>, tag: Int) {
        self.plain = nil
        self.events = events
        self.tag = tag
    }

    private func record(_ event: ConnectionEvent) {
        plain?.push(event)
        events?.push((tag, event))
    }

    func connectionDidOpen(_ connection: WebSocketConnection) { record(.open) }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        record(.message(kind, Array(payload)))
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        record(.closed(code?.rawValue))
    }

    func connection(_ connection: WebSocketConnection, didFailToConnect error: TransportError) {
        record(.failed(error.code))
    }
}

/// A connection handler that sends every message back unchanged.
final class EchoHandler: WebSocketConnectionHandler {
    let closed: EventQueue<UInt16?>?

    init(closed: EventQueue<UInt16?>? = nil) {
        self.closed = closed
    }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        connection.send(payload, kind: kind)
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        closed?.push(code?.rawValue)
    }
}

/// What the server side saw of an accepted connection.
struct AcceptedConnection: Sendable, Equatable {
    var path: String
    var authorization: String?
    var subprotocol: String?
}

/// A server delegate that echoes on every connection and reports what it accepted.
final class EchoServerDelegate: WebSocketServerDelegate {
    let accepted: EventQueue<AcceptedConnection>?
    let closed: EventQueue<UInt16?>?

    init(accepted: EventQueue<AcceptedConnection>? = nil, closed: EventQueue<UInt16?>? = nil) {
        self.accepted = accepted
        self.closed = closed
    }

    func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
        connection.handler = EchoHandler(closed: closed)
        accepted?.push(AcceptedConnection(
            path: connection.requestPath, authorization: connection.authorization,
            subprotocol: connection.subprotocol))
    }
}

/// Runs `body` on `loop` and returns its result, failing after `timeout` instead of hanging.
@discardableResult
func onLoop<T: Sendable>(
    _ loop: EventLoop, timeout: Duration = .seconds(10), _ body: @Sendable @escaping () throws -> T
) async throws -> T {
    let result = EventQueue<Result<T, any Error>>()
    loop.execute { result.push(Result { try body() }) }
    return try await result.next(timeout: timeout, "work on the event loop").get()
}

/// Starts an echo server on `loop` and returns it (bound to the loop) with its port.
func startEchoServer(
    on loop: EventLoop, configuration: WebSocketServer.Configuration = .init(),
    accepted: EventQueue<AcceptedConnection>? = nil, closed: EventQueue<UInt16?>? = nil
) async throws -> (server: LoopBound<WebSocketServer>, port: Int) {
    try await onLoop(loop) {
        let server = WebSocketServer(
            eventLoop: loop, configuration: configuration, delegate: EchoServerDelegate(accepted: accepted, closed: closed))
        try server.start()
        return (LoopBound(server, eventLoop: loop), server.port)
    }
}

/// Opens one client connection on `loop` whose events go to `events`.
func connectClient(
    on loop: EventLoop, port: Int, path: String = "/", subprotocol: String? = "hub.v1",
    authorization: String? = nil, configuration: WebSocketClient.Configuration = .init(),
    events: EventQueue<ConnectionEvent>
) async throws -> LoopBound<WebSocketConnection> {
    try await onLoop(loop) {
        let client = WebSocketClient(eventLoop: loop, configuration: configuration)
        let connection = client.connect(
            host: "127.0.0.1", port: port, path: path, subprotocol: subprotocol, authorization: authorization,
            handler: RecordingHandler(events))
        return LoopBound(connection, eventLoop: loop)
    }
}

/// Deterministic pseudo-random bytes.
func patternBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &+ 0x9E37_79B9_7F4A_7C15
    var bytes = [UInt8]()
    bytes.reserveCapacity(count)
    for _ in 0..<count {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes.append(UInt8(truncatingIfNeeded: state >> 33))
    }
    return bytes
}
