import Foundation
import HubLoop
import NetworkTestSupport
import HubTransport
import Testing

/// A client handler that records open, echoed text and the connection error message.
private final class TLSClientHandler: WebSocketConnectionHandler, Sendable {
    enum Event: Sendable, Equatable {
        case open
        case text(String)
        case failed(TransportError.Code, String)
        case closed(UInt16?)
    }

    let events = EventQueue<Event>()

    func connectionDidOpen(_ connection: WebSocketConnection) { events.push(.open) }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        events.push(.text(String(decoding: payload, as: UTF8.self)))
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        events.push(.closed(code?.rawValue))
    }

    func connection(_ connection: WebSocketConnection, didFailToConnect error: TransportError) {
        events.push(.failed(error.code, error.message))
    }
}

@Suite("Transport: TLS", .enabled(if: TestCertificate.opensslAvailable, "needs the openssl command line"))
struct TLSTransportTests {
    private func tlsServerConfiguration(_ certificate: TestCertificate) -> WebSocketServer.Configuration {
        WebSocketServer.Configuration(
            host: "127.0.0.1", port: 0,
            tls: TLSConfiguration(certificatePath: certificate.certificatePath, privateKeyPath: certificate.privateKeyPath))
    }

    /// Connects a client (TLS when `tls` is given) to `port` and returns its handler and connection.
    private func connect(
        on loop: EventLoop, port: Int, tls: ClientTLS?
    ) async throws -> (TLSClientHandler, LoopBound<WebSocketConnection>) {
        let handler = TLSClientHandler()
        let connection = try await onLoop(loop) {
            let client = WebSocketClient(eventLoop: loop)
            return LoopBound(client.connect(host: "127.0.0.1", port: port, tls: tls, handler: handler), eventLoop: loop)
        }
        return (handler, connection)
    }

    @Test(arguments: [
        ClientTLS(allowsSelfSigned: true),
        ClientTLS(caFilePath: ""),  // replaced by the certificate itself: full verification
    ])
    func echoesOverTLS(tls: ClientTLS) async throws {
        let certificate = try TestCertificate.get()
        var tls = tls
        if tls.caFilePath != nil { tls.caFilePath = certificate.certificatePath }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let (_, port) = try await startEchoServer(on: loop, configuration: tlsServerConfiguration(certificate))
        #expect(port > 0)
        let (handler, connection) = try await connect(on: loop, port: port, tls: tls)
        #expect(try await handler.events.next() == .open)
        let big = String(repeating: "0123456789", count: 20_000)
        try await onLoop(loop) {
            connection.value.send(text: "hello over tls")
            connection.value.send(text: big)
        }
        #expect(try await handler.events.next() == .text("hello over tls"))
        #expect(try await handler.events.next() == .text(big))
        try await onLoop(loop) { connection.value.close(code: .normal) }
        #expect(try await handler.events.next() == .closed(1000))
    }

    /// lws 4.1.6 re-allocates the process-wide OpenSSL ex-data index its verify callback
    /// uses on every context created with DO_SSL_GLOBAL_INIT: a loop created during
    /// another loop's client handshake broke it. The server loop is held until the new
    /// loops exist, so the client's handshake is in progress while they are created
    /// (when the client got as far as its ClientHello; the test passes either way with
    /// the fix, and fails without it whenever it did).
    ///
    /// The bug shows as a failed TLS verification, which fails the test at once. On a
    /// loaded machine (two CI runs, with the whole suite in parallel) the held server
    /// loop can instead make the attempt time out ("Timed out waiting SSL", a message
    /// that names TLS too): that attempt proves nothing either way, and the scenario
    /// runs again, three times at most.
    @Test func handshakeSurvivesLoopsCreatedMeanwhile() async throws {
        let certificate = try TestCertificate.get()
        var failures: [String] = []
        for _ in 0..<3 {
            let serverLoop = try EventLoop()
            let clientLoop = try EventLoop()
            defer { clientLoop.shutdown(); serverLoop.shutdown() }
            let (_, port) = try await startEchoServer(on: serverLoop, configuration: tlsServerConfiguration(certificate))
            let held = DispatchSemaphore(value: 0)
            let holding = EventQueue<Bool>()
            serverLoop.execute { holding.push(true); held.wait() }
            #expect(try await holding.next())
            let (handler, connection) = try await connect(on: clientLoop, port: port, tls: ClientTLS(allowsSelfSigned: true))
            // A round trip through the client loop: the connect has been serviced once.
            try await onLoop(clientLoop) {}
            for _ in 0..<3 {
                let other = try EventLoop()
                other.shutdown()
            }
            held.signal()
            let opened = try await handler.events.next()
            if case .failed(_, let message) = opened {
                // A time-out ("Timed out waiting SSL": the held loop on a busy host) proves
                // nothing; any other failure is the bug.
                failures.append(message)
                if message.contains("Timed out") { continue }
                Issue.record("the handshake failed: \(message)")
                return
            }
            #expect(opened == .open, "\(opened)")
            try await onLoop(clientLoop) { connection.value.send(text: "still verified") }
            #expect(try await handler.events.next() == .text("still verified"))
            return
        }
        Issue.record("three attempts failed: \(failures)")
    }

    @Test func clientRefusesASelfSignedCertificateWithAClearError() async throws {
        let certificate = try TestCertificate.get()
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let (_, port) = try await startEchoServer(on: loop, configuration: tlsServerConfiguration(certificate))
        let (handler, _) = try await connect(on: loop, port: port, tls: ClientTLS())
        let event = try await handler.events.next()
        guard case let .failed(code, message) = event else {
            Issue.record("expected a connection failure, got \(event)")
            return
        }
        #expect(code == .connectionFailed)
        #expect(message.contains("TLS handshake failed"))
        #expect(message.contains("self-signed"))
    }

    @Test func plainClientCannotTalkToATLSServer() async throws {
        let certificate = try TestCertificate.get()
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let (_, port) = try await startEchoServer(on: loop, configuration: tlsServerConfiguration(certificate))
        let (handler, _) = try await connect(on: loop, port: port, tls: nil)
        let event = try await handler.events.next()
        guard case let .failed(code, _) = event else {
            Issue.record("expected a connection failure, got \(event)")
            return
        }
        #expect(code == .connectionFailed)
    }

    @Test func missingCAFileFailsTheConnectionNamingIt() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let missing = NSTemporaryDirectory() + "hub-no-such-ca-\(UUID().uuidString).pem"
        let (handler, _) = try await connect(on: loop, port: 9, tls: ClientTLS(caFilePath: missing))
        #expect(try await handler.events.next() == .failed(.connectionFailed, "TLS CA file '\(missing)' does not exist"))
    }

    @Test(arguments: ["certificate", "private key"])
    func missingServerFileFailsStartWithATypedError(role: String) async throws {
        let certificate = try TestCertificate.get()
        let missing = NSTemporaryDirectory() + "hub-no-such-\(UUID().uuidString).pem"
        let tls = role == "certificate"
            ? TLSConfiguration(certificatePath: missing, privateKeyPath: certificate.privateKeyPath)
            : TLSConfiguration(certificatePath: certificate.certificatePath, privateKeyPath: missing)
        let loop = try EventLoop()
        defer { loop.shutdown() }
        await #expect(throws: TransportError(
            code: .tlsConfigurationFailed, message: "TLS \(role) file '\(missing)' does not exist")
        ) {
            _ = try await startEchoServer(on: loop, configuration: .init(host: "127.0.0.1", port: 0, tls: tls))
        }
    }

    @Test func aCertificateThatIsNotPEMFailsStartNamingTheFiles() async throws {
        let certificate = try TestCertificate.get()
        let garbage = certificate.directory + "/garbage-\(UUID().uuidString).pem"
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: garbage))
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let tls = TLSConfiguration(certificatePath: garbage, privateKeyPath: certificate.privateKeyPath)
        do {
            _ = try await startEchoServer(on: loop, configuration: .init(host: "127.0.0.1", port: 0, tls: tls))
            Issue.record("a server with a garbage certificate started")
        } catch let error as TransportError {
            #expect(error.code == .listenFailed)
            #expect(error.message.contains(garbage))
        }
    }
}
