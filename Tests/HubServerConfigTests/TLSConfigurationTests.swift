import Foundation
import NetworkTestSupport
import HubServer
import HubTransport
import Testing

/// `listen.tls` in the YAML configuration and `hubcli serve --tls-*`.
@Suite("Broker configuration: listen.tls")
struct TLSConfigurationTests {
    /// A temporary directory with a `cert.pem` and a `key.pem` (contents do not matter to parsing).
    private static func directoryWithFiles() throws -> String {
        let directory = NSTemporaryDirectory() + "hub-tls-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data("cert\n".utf8).write(to: URL(fileURLWithPath: directory + "/cert.pem"))
        try Data("key\n".utf8).write(to: URL(fileURLWithPath: directory + "/key.pem"))
        return directory
    }

    @Test func absolutePathsAreRead() throws {
        let directory = try Self.directoryWithFiles()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let yaml = "listen:\n  port: 7443\n  tls: {certificate: \(directory)/cert.pem, privateKey: \(directory)/key.pem}\n"
        let configuration = try parseBroker(yaml: yaml)
        #expect(configuration.service.port == 7443)
        #expect(configuration.service.tls == TLSConfiguration(
            certificatePath: directory + "/cert.pem", privateKeyPath: directory + "/key.pem"))
    }

    @Test func relativePathsAreTakenFromTheConfigurationFilesDirectory() throws {
        let directory = try Self.directoryWithFiles()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/hub.yml"
        try Data("listen:\n  tls:\n    certificate: cert.pem\n    privateKey: key.pem\n".utf8)
            .write(to: URL(fileURLWithPath: file))
        let configuration = try loadBroker(contentsOf: file)
        #expect(configuration.service.tls == TLSConfiguration(
            certificatePath: directory + "/cert.pem", privateKeyPath: directory + "/key.pem"))
    }

    @Test func noTLSSectionMeansPlainWebSocket() throws {
        #expect(try parseBroker(yaml: "listen: {port: 7420}\n").service.tls == nil)
    }

    @Test func errorsNameTheFileLineColumnAndKeyPath() throws {
        let directory = try Self.directoryWithFiles()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cases: [(String, String)] = [
            ("listen:\n  tls:\n    certificate: \(directory)/nope.pem\n    privateKey: \(directory)/key.pem\n",
             "hub.yml:3:18: listen.tls.certificate: the certificate file '\(directory)/nope.pem' does not exist"),
            ("listen:\n  tls:\n    certificate: \(directory)/cert.pem\n    privateKey: \(directory)/nokey.pem\n",
             "hub.yml:4:17: listen.tls.privateKey: the private key file '\(directory)/nokey.pem' does not exist"),
            ("listen:\n  tls:\n    certificate: \(directory)\n    privateKey: \(directory)/key.pem\n",
             "hub.yml:3:18: listen.tls.certificate: the certificate file '\(directory)' is not a readable file"),
            ("listen:\n  tls: {certificate: \(directory)/cert.pem}\n",
             "hub.yml:2:8: listen.tls: missing 'privateKey' (the PEM private key file)"),
            ("listen:\n  tls: {certificate: \"\", privateKey: k}\n",
             "hub.yml:2:22: listen.tls.certificate: expected the path of the PEM certificate file (got an empty string)"),
            ("listen:\n  tls: {cert: a}\n",
             "hub.yml:2:9: listen.tls.cert: unknown key 'cert'; valid keys: certificate, privateKey"),
            ("listen:\n  tls: yes\n", "hub.yml:2:8: listen.tls: expected a mapping (got \"yes\")"),
        ]
        for (yaml, expected) in cases {
            #expect {
                _ = try parseBroker(yaml: yaml)
            } throws: { error in
                "\(error)" == expected
            }
        }
    }

    @Test
    func serveWithAMissingCertificateFailsNamingIt() async throws {
        let missing = NSTemporaryDirectory() + "hub-missing-\(UUID().uuidString).pem"
        let outcome = try await HubCLIExecutable.run([
            "serve", "--port", "0", "--tls-certificate", missing, "--tls-private-key", missing,
        ])
        #expect(outcome.status != 0)
        #expect(outcome.errors.contains("tls_configuration_failed: TLS certificate file '\(missing)' does not exist"))
    }

    @Test
    func checkConfigChecksTheTLSOptionsFiles() async throws {
        let example = CheckConfigProcessTests.packageRoot.appendingPathComponent("examples/hub.yml").path
        let missing = NSTemporaryDirectory() + "hub-missing-\(UUID().uuidString).pem"
        let outcome = try await HubCLIExecutable.run([
            "serve", "--config", example, "--check-config", "--tls-certificate", missing, "--tls-private-key", missing,
        ])
        #expect(outcome.status == 1)
        #expect(outcome.output.isEmpty)
        #expect(outcome.errors.contains("tls_configuration_failed: TLS certificate file '\(missing)' does not exist"))
    }

    @Test
    func serveNeedsBothTLSOptions() async throws {
        let outcome = try await HubCLIExecutable.run(["serve", "--port", "0", "--tls-certificate", "cert.pem"])
        #expect(outcome.status != 0)
        #expect(outcome.errors.contains("--tls-certificate and --tls-private-key must be given together"))
    }
}
