import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NetworkTestSupport
@testable import HubTransport
import Testing

/// A server takes accepted sockets into lws, and closes the sockets whose close
/// handshake is complete, a few per pass of its loop, so that a burst of either
/// does not hold up the loop's other connections for one long pass; and no socket
/// of the burst is dropped or left behind. Real loops, real sockets.
@Suite("Bounded work per pass", .serialized)
struct BoundedPassWorkTests {
    /// A listening TCP socket of the test's own on 127.0.0.1, and its port.
    static func listen() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HTTPTestClient.Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && Glibc.listen(descriptor, 64) == 0
                    && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw HTTPTestClient.Failure(description: "bind/listen: errno \(errno)")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test func aBurstOfAcceptedSocketsIsTakenIntoLWSAFewAPassAndEveryOneIsServed() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var configuration = WebSocketServer.Configuration()
        configuration.listens = false
        configuration.adoptionsPerPass = 3
        // The clients send their upgrades one after another (slowly on a loaded machine).
        configuration.handshakeTimeout = 60
        let (server, _) = try await startEchoServer(on: loop, configuration: configuration)
        let (listening, port) = try Self.listen()
        defer { close(listening) }
        let clients = try (0..<10).map { _ in try HTTPTestClient(port: port, timeoutSeconds: 10) }
        let sockets = (0..<10).map { _ in AcceptedSocket(accepted: accept(listening, nil, nil)) }
        #expect(sockets.allSatisfy { $0.descriptor >= 0 })

        // Queued when handed in; three taken into lws at the end of the pass.
        let queued = EventQueue<Int>()
        try await onLoop(loop) {
            for socket in sockets { server.value.adopt(socket) }
            queued.push(server.value.queuedAdoptionCount)
            loop.executeAtEndOfPass { queued.push(server.value.queuedAdoptionCount) }
        }
        #expect(try await queued.next() == 10)
        #expect(try await queued.next() == 7)

        for (index, client) in clients.enumerated() {
            let answer = try await Blocking.run { try client.upgrade() }
            #expect(answer.status == 101, "socket \(index)")
            let text = Array("hello \(index)".utf8)
            try client.write(HTTPTestClient.frame(opcode: 0x1, payload: text))
            #expect(await Blocking.run { client.readFrame() }?.payload == text, "socket \(index)")
        }
        #expect(try await onLoop(loop) { server.value.queuedAdoptionCount } == 0)
    }

    @Test func aBurstOfConnectionsToTheListenerIsAcceptedAFewAPassAndEveryOneIsServed() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var configuration = WebSocketServer.Configuration()
        configuration.adoptionsPerPass = 2
        configuration.handshakeTimeout = 60
        let (server, port) = try await startEchoServer(on: loop, configuration: configuration)
        // Connected before any is served: they wait in the kernel's accept queue.
        let clients = try (0..<24).map { _ in try HTTPTestClient(port: port, timeoutSeconds: 10) }
        for (index, client) in clients.enumerated() {
            let answer = try await Blocking.run { try client.upgrade() }
            #expect(answer.status == 101, "connection \(index)")
        }
        for (index, client) in clients.enumerated() {
            let text = Array("hello \(index)".utf8)
            try client.write(HTTPTestClient.frame(opcode: 0x1, payload: text))
            #expect(await Blocking.run { client.readFrame() }?.payload == text, "connection \(index)")
        }
        let figures = try await onLoop(loop) {
            (server.value.openConnections.count, server.value.queuedAdoptionCount, server.value.pendingHandshakeCount)
        }
        #expect(figures == (24, 0, 0))
    }

    /// TLS sockets whose handshake has not begun (clients that connect and send
    /// nothing yet) hold at most eight places, each for a while (100 ms by default;
    /// here 1 s, so that a busy host connects all twelve inside it): the rest wait,
    /// then are adopted too.
    @Test(.enabled(if: TestCertificate.opensslAvailable, "needs the openssl command line"))
    func atMostEightTLSHandshakesAreInFlightAndSilentOnesStopCounting() async throws {
        let certificate = try TestCertificate.get()
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let configuration = WebSocketServer.Configuration(
            tls: TLSConfiguration(certificatePath: certificate.certificatePath, privateKeyPath: certificate.privateKeyPath))
        let (server, port) = try await startEchoServer(on: loop, configuration: configuration)
        try await onLoop(loop) { server.value.tlsInFlightHold = 1_000_000_000 }
        let silent = try (0..<12).map { _ in try HTTPTestClient(port: port, timeoutSeconds: 10) }
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let (tracked, queued) = try await onLoop(loop) { (server.value.trackedSocketCount, server.value.queuedAdoptionCount) }
            if tracked == 12, queued == 0 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let (most, waited) = try await onLoop(loop) { (server.value.mostTLSHandshakesInFlight, server.value.adoptionsThatWaitedForTLS) }
        #expect(most == 8)
        #expect(waited > 0, "the ninth socket waited for a place")
        #expect(try await onLoop(loop) { server.value.queuedAdoptionCount } == 0)
        #expect(try await onLoop(loop) { server.value.trackedSocketCount } == 12)
        _ = silent
    }

    @Test func socketsWhoseCloseHandshakeIsCompleteCloseAFewAPassAndEveryOneCloses() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var configuration = WebSocketServer.Configuration()
        configuration.closesPerPass = 2
        configuration.handshakeTimeout = 60
        let closed = EventQueue<UInt16?>()
        let (server, port) = try await startEchoServer(on: loop, configuration: configuration, closed: closed)
        let clients = try (0..<16).map { _ in try HTTPTestClient(port: port, timeoutSeconds: 10) }
        for client in clients {
            #expect(try await Blocking.run { try client.upgrade() }.status == 101)
        }
        // Every close frame first, so that the server reads many in one pass.
        let close = HTTPTestClient.frame(opcode: 0x8, payload: [0x03, 0xE8])
        for client in clients { try client.write(close) }
        for (index, client) in clients.enumerated() {
            let echoed = await Blocking.run { client.readFrame() }
            #expect(echoed?.closeCode == 1000, "connection \(index)")
            // Then the server closes the TCP connection.
            #expect(await Blocking.run { client.readFrame() } == nil, "connection \(index)")
        }
        let codes = try await closed.next(16)
        #expect(codes.allSatisfy { $0 == 1000 })
        let figures = try await onLoop(loop) {
            (server.value.trackedSocketCount, server.value.queuedCloseCount, server.value.mostClosedInOnePass)
        }
        #expect(figures.0 == 0)
        #expect(figures.1 == 0)
        #expect((1...2).contains(figures.2))
    }

    @Test func upgradeRequestsReadTogetherAreAnsweredAFewAPassAndEveryConnectionOpens() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var configuration = WebSocketServer.Configuration()
        configuration.upgradesPerPass = 2
        configuration.handshakeTimeout = 60
        let (server, port) = try await startEchoServer(on: loop, configuration: configuration)
        let clients = try (0..<12).map { _ in try HTTPTestClient(port: port, timeoutSeconds: 10) }
        // Every socket is taken into lws first, so that their requests arrive together.
        let deadline = ContinuousClock.now + .seconds(10)
        while try await onLoop(loop, { server.value.trackedSocketCount }) < clients.count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        // Each request with the client's first frame right behind it, in one write: the
        // frame waits with the request and reaches the connection once it is open.
        let request = Array((
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
        for (index, client) in clients.enumerated() {
            try client.write(request + HTTPTestClient.frame(opcode: 0x1, payload: Array("hello \(index)".utf8)))
        }
        for (index, client) in clients.enumerated() {
            #expect(try await Blocking.run { try client.readResponse() }.status == 101, "connection \(index)")
            let echoed = await Blocking.run { client.readFrame() }
            #expect(echoed.map { String(decoding: $0.payload, as: UTF8.self) } == "hello \(index)", "connection \(index)")
        }
        let figures = try await onLoop(loop) {
            (server.value.openConnectionCount, server.value.queuedUpgradeCount, server.value.mostUpgradedInOnePass)
        }
        #expect(figures.0 == clients.count)
        #expect(figures.1 == 0)
        #expect((1...2).contains(figures.2))
    }
}
