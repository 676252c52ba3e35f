import Foundation
import HubClient
import HubServer
import NetworkTestSupport
import RemoteTestSupport
import HubTransport
import Testing

@Suite("HubClient over TLS", .enabled(if: TestCertificate.opensslAvailable, "needs the openssl command line"))
struct HubClientTLSTests {
    /// A HubService serving wss:// on an ephemeral port of 127.0.0.1.
    private func startTLSService(eventLoops: Int = 1) async throws -> (HubService, Int, TestCertificate) {
        let certificate = try TestCertificate.get()
        var configuration = HubService.Configuration(
            host: "127.0.0.1", port: 0,
            tls: TLSConfiguration(certificatePath: certificate.certificatePath, privateKeyPath: certificate.privateKeyPath))
        configuration.eventLoops = eventLoops
        let service = try HubService(configuration: configuration)
        let port = try await service.start()
        return (service, port, certificate)
    }

    @Test(arguments: ["self-signed", "ca-file"])
    func subscribeSendAndListOverWSS(trust: String) async throws {
        let (service, port, certificate) = try await startTLSService()
        var configuration = testConfiguration()
        configuration.tls = trust == "self-signed"
            ? ClientTLS(allowsSelfSigned: true) : ClientTLS(caFilePath: certificate.certificatePath)
        let client = try HubClient(url: "wss://127.0.0.1:\(port)/", configuration: configuration)
        do {
            try await client.connect()
            let recorder = Recorder(demand: .max(2))
            client.subscribe(to: "prices").subscribe(recorder)
            try await waitForSubscribers(1, of: "prices", client: client)
            for index in 1...3 { try await client.send(.int(Int64(index)), to: "prices") }
            let catalog = try await client.list()
            #expect(subscribers(of: "prices", in: catalog) == 1)
            #expect(try await recorder.events.next(2) == [.value(1), .value(2)])
            #expect(recorder.events.drain().isEmpty)
            recorder.request(.max(1))
            #expect(try await recorder.events.next() == .value(3))
        } catch {
            await client.close()
            await service.shutdown()
            throw error
        }
        await client.close()
        await service.shutdown()
    }

    /// The hub's loop accepts and hands each socket to a loop in turn: every loop does
    /// its connections' TLS.
    @Test func everyEventLoopServesWSS() async throws {
        let (service, port, certificate) = try await startTLSService(eventLoops: 3)
        var configuration = testConfiguration()
        configuration.tls = ClientTLS(caFilePath: certificate.certificatePath)
        var clients: [HubClient] = []
        var recorders: [Recorder] = []
        do {
            for _ in 0..<3 {
                let client = try HubClient(url: "wss://127.0.0.1:\(port)/", configuration: configuration)
                try await client.connect()
                let recorder = Recorder(demand: .max(1))
                client.subscribe(to: "loops").subscribe(recorder)
                clients.append(client)
                recorders.append(recorder)
                try await waitForSubscribers(clients.count, of: "loops", client: client)
            }
            #expect(await service.statistics.loopSessions == [1, 1, 1])
            try await clients[0].send("across", to: "loops")
            for recorder in recorders {
                #expect(try await recorder.events.next() == .value("across"))
            }
        } catch {
            for client in clients { await client.close() }
            await service.shutdown()
            throw error
        }
        for client in clients { await client.close() }
        await service.shutdown()
    }

    @Test func clientThatDoesNotTrustTheCertificateGetsAClearConnectionError() async throws {
        let (service, port, _) = try await startTLSService()
        let client = try HubClient(url: "wss://127.0.0.1:\(port)/", configuration: testConfiguration())
        do {
            try await client.connect()
            Issue.record("a client trusting only the system CAs accepted a self-signed certificate")
        } catch {
            #expect(error.code == .connectionFailed)
            #expect(error.message.contains("wss://127.0.0.1:\(port)/") || error.message.contains("127.0.0.1:\(port)"))
            #expect(error.message.contains("TLS handshake failed"))
        }
        await client.close()
        await service.shutdown()
    }

    @Test func badCertificatePathFailsStartWithTheTypedError() async throws {
        let missing = NSTemporaryDirectory() + "hub-missing-\(UUID().uuidString).pem"
        let certificate = try TestCertificate.get()
        let service = try HubService(configuration: .init(
            host: "127.0.0.1", port: 0,
            tls: TLSConfiguration(certificatePath: missing, privateKeyPath: certificate.privateKeyPath)))
        await #expect(throws: TransportError(
            code: .tlsConfigurationFailed, message: "TLS certificate file '\(missing)' does not exist")
        ) {
            try await service.start()
        }
        await service.shutdown(grace: .zero)
    }
}
