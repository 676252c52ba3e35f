import Foundation
import HubTestSupport
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
