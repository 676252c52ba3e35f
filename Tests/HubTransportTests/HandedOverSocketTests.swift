import Foundation
import HubLoop
import NetworkTestSupport
@testable import HubTransport
import Testing

/// Sockets one loop's server accepts and another loop's server serves
/// (``WebSocketServer/socketDistributor`` and ``WebSocketServer/adopt(_:)``), as a broker
/// with several event loops runs them. Real loops, real sockets.
@Suite("Handed-over sockets", .serialized)
struct HandedOverSocketTests {
    /// A listening server on `acceptor` that hands every socket to a server on `server`.
    static func startHandingOver(
        from acceptor: EventLoop, to server: EventLoop, maximumPendingHandshakes: Int = 1000
    ) async throws -> (listening: LoopBound<WebSocketServer>, serving: LoopBound<WebSocketServer>, port: Int) {
        let (serving, _) = try await startEchoServer(
            on: server, configuration: {
                var configuration = WebSocketServer.Configuration(maximumPendingHandshakes: maximumPendingHandshakes)
                configuration.listens = false
                return configuration
            }())
        let (listening, port) = try await startEchoServer(
            on: acceptor, configuration: .init(maximumPendingHandshakes: maximumPendingHandshakes))
        try await onLoop(acceptor) {
            listening.value.socketDistributor = {
                { socket in server.execute { serving.value.adopt(socket) } }
            }
        }
        return (listening, serving, port)
    }

    @Test func aLoopServesHandedOverSocketsWithOneServer() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var configuration = WebSocketServer.Configuration()
        configuration.listens = false
        _ = try await startEchoServer(on: loop, configuration: configuration)
        // lws binds every handed-over connection, once its request is parsed, to the first
        // vhost of the context on their shared port: a second server would lose track of them.
        let error = await #expect(throws: TransportError.self) {
            try await startEchoServer(on: loop, configuration: configuration)
        }
        #expect(error?.code == .listenFailed)
        #expect(error?.message == "another server of this event loop serves handed-over sockets")
    }

    @Test func handedOverSocketsLeaveNoHandshakeBehind() async throws {
        let acceptor = try EventLoop()
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown(); acceptor.shutdown() }
        // A small bound: a socket the serving server forgot would soon displace the others.
        let (listening, serving, port) = try await Self.startHandingOver(
            from: acceptor, to: serverLoop, maximumPendingHandshakes: 4)
        for round in 0..<40 {
            let events = EventQueue<ConnectionEvent>()
            let connection = try await connectClient(on: clientLoop, port: port, events: events)
            #expect(try await events.next() == .open, "connection \(round)")
            try await onLoop(clientLoop) { connection.value.send(text: "ping \(round)") }
            #expect(try await events.next() == .text("ping \(round)"))
            try await onLoop(clientLoop) { connection.value.close() }
            #expect(try await events.next() == .closed(1000))
        }
        // A plain HTTP request ends a socket's wait for its request too.
        let http = try HTTPTestClient(port: port, timeoutSeconds: 5)
        #expect(try await Blocking.run { try http.send(path: "/nothing").status } == 404)
        http.shutdownConnection()
        #expect(await Blocking.run { http.readsEndOfStream() })
        let figures = try await onLoop(serverLoop) {
            (serving.value.pendingHandshakeCount, serving.value.displacedHandshakeCount, serving.value.openConnections.count)
        }
        #expect(figures.0 == 0)
        #expect(figures.1 == 0)
        #expect(figures.2 == 0)
        #expect(try await onLoop(acceptor) { listening.value.pendingHandshakeCount } == 0)
    }

    @Test func aWSIUsedOffItsLoopTrapsInDebugBuilds() async {
        await #expect(processExitsWith: .failure) {
            let serverLoop = try EventLoop()
            let clientLoop = try EventLoop()
            let (_, port) = try await startEchoServer(on: serverLoop)
            let events = EventQueue<ConnectionEvent>()
            let connection = try await connectClient(on: clientLoop, port: port, events: events)
            _ = try await events.next()
            let wsi = try await onLoop(clientLoop) { UnsafeSendable(connection.value.wsi!) }
            // From the test's thread, not the client loop's: the check traps.
            EventLoop.assertOwnerThread(of: wsi.value)
        }
    }
}

/// A value carried across threads in a test that checks what happens when it is misused.
struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
