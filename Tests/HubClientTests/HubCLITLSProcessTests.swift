import Foundation
import NetworkTestSupport
import Testing

/// `hubcli serve --tls-certificate/--tls-private-key` and the client commands' `--insecure`/`--ca-file`.
@Suite("hubcli process over TLS", .enabled(if: TestCertificate.opensslAvailable, "needs the openssl command line"))
struct HubCLITLSProcessTests {
    @Test func serveOverTLSAndTheClientTrustOptions() async throws {
        let certificate = try TestCertificate.get()
        let hubcli = try HubCLIExecutable.locate()
        let server = try RunningProcess(hubcli, [
            "serve", "--port", "0", "--log-level", "warning",
            "--tls-certificate", certificate.certificatePath, "--tls-private-key", certificate.privateKeyPath,
        ])
        let port = try await server.port(scheme: "wss")
        let url = "wss://127.0.0.1:\(port)/"

        let send = try await run(hubcli, ["send", "prices", "1", "--url", url, "--insecure"])
        #expect(send.status == 0, "\(send.stderr)")
        let list = try await run(hubcli, ["list", "--json", "--url", url, "--ca-file", certificate.certificatePath])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("\"prices\""))

        let untrusted = try await run(hubcli, ["list", "--url", url])
        #expect(untrusted.status == 2)
        #expect(untrusted.stderr.contains("cannot connect to \(url): TLS handshake failed"))

        let plain = try await run(hubcli, ["list", "--url", "ws://127.0.0.1:\(port)/", "--timeout", "5"])
        #expect(plain.status == 2)

        server.process.interrupt()
        let stopped = try await server.finish()
        #expect(stopped.status == 0, "\(stopped.stderr)")
    }
}
