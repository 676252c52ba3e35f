import DequeModule
import HubTransport
import Foundation

/// A wait that did not finish in time.
struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// A thread-safe FIFO that loop-thread code pushes into and async tests await, with a
/// timeout on every wait so that a bug fails the test instead of hanging it.
final class EventQueue<Element: Sendable>: Sendable {
    private struct State {
        var buffer = Deque<Element>()
        var waiter: (id: UInt64, continuation: CheckedContinuation<Element?, Never>)?
        var nextID: UInt64 = 0
    }

    private let lock = NSLock()
    nonisolated(unsafe) private var unsafeState = State()

    /// `Synchronization.Mutex` is futex-based on Linux and invisible to ThreadSanitizer,
    /// so the queue uses a pthread-backed lock.
    private var state: StateAccess { StateAccess(queue: self) }

    private struct StateAccess {
        let queue: EventQueue
        func withLock<R>(_ body: (inout State) -> R) -> R {
            queue.lock.lock()
            defer { queue.lock.unlock() }
            return body(&queue.unsafeState)
        }
    }

    func push(_ element: Element) {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter.continuation
            }
            state.buffer.append(element)
            return nil
        }
        waiter?.resume(returning: element)
    }

    /// The next element, or `TimedOut` after `timeout`.
    func next(timeout: Duration = .seconds(10), _ what: String = "an event") async throws -> Element {
        let element: Element? = await withCheckedContinuation { continuation in
            let id: UInt64? = state.withLock { state in
                if let first = state.buffer.popFirst() {
                    continuation.resume(returning: first)
                    return nil
                }
                precondition(state.waiter == nil, "one waiter at a time")
                state.nextID += 1
                state.waiter = (state.nextID, continuation)
                return state.nextID
            }
            guard let id else { return }
            Task {
                try? await Task.sleep(for: timeout)
                self.expire(id)
            }
        }
        guard let element else { throw TimedOut(what: what) }
        return element
    }

    /// `count` elements in arrival order.
    func next(_ count: Int, timeout: Duration = .seconds(20), _ what: String = "events") async throws -> [Element] {
        var result: [Element] = []
        result.reserveCapacity(count)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while result.count < count {
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { throw TimedOut(what: "\(count) \(what), got \(result.count)") }
            result.append(try await next(timeout: left, what))
        }
        return result
    }

    private func expire(_ id: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: nil)
    }
}

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
