import Foundation
import HubServer
import NetworkTestSupport
import Testing

/// `cluster:` in the configuration and `hubcli serve --cluster/--node`.
@Suite("Cluster configuration")
struct ClusterConfigurationTests {
    @Test func readsAListOrACommaSeparatedString() throws {
        let listed = try BrokerConfiguration.parse(yaml: """
            cluster:
              nats: ["nats://127.0.0.1:4222", "nats://user:secret@nats2.example:4223"]
              node: hub-1
            """)
        #expect(listed.cluster == ClusterSettings(
            urls: ["nats://127.0.0.1:4222", "nats://user:secret@nats2.example:4223"], node: "hub-1"))
        let joined = try BrokerConfiguration.parse(yaml: "cluster: {nats: \"nats://a:1, nats://[::1]:2\"}")
        #expect(joined.cluster == ClusterSettings(urls: ["nats://a:1", "nats://[::1]:2"]))
        #expect(try BrokerConfiguration.parse(yaml: "listen: {port: 0}").cluster == nil)
        let immediate = try BrokerConfiguration.parse(yaml: "cluster: {nats: \"nats://a:1\", sendImmediately: true}")
        #expect(immediate.cluster?.sendImmediately == true)
    }

    @Test func aBadURLIsReportedAtItsPlaceNamingIt() throws {
        let error = try #require(throws: ConfigurationError.self) {
            try BrokerConfiguration.parse(yaml: """
                cluster:
                  nats:
                    - nats://127.0.0.1:4222
                    - http://127.0.0.1:4223
                """)
        }
        #expect(error.line == 4)
        #expect(error.message.contains("'http://127.0.0.1:4223'"))
        #expect(error.message.contains("scheme 'http' is not nats"))

        let cases: [(String, String)] = [
            ("nats://127.0.0.1:99999", "the port '99999' is not a number between 1 and 65535"),
            ("nats://127.0.0.1", "has no port"),
            ("nats://:4222", "has no host"),
            ("127.0.0.1:4222", "has no scheme"),
            ("nats://127.0.0.1:4222/x", "has a path"),
            ("nats://a:1,,nats://b:2", "an empty NATS URL"),
        ]
        for (url, problem) in cases {
            let error = try #require(throws: ConfigurationError.self) {
                try BrokerConfiguration.parse(yaml: "cluster: {nats: \"\(url)\"}")
            }
            #expect(error.message.contains(problem), "\(url): \(error.message)")
        }
    }

    @Test func missingURLsAndBadNodeNamesAreErrors() throws {
        let missing = try #require(throws: ConfigurationError.self) {
            try BrokerConfiguration.parse(yaml: "cluster: {node: a}")
        }
        #expect(missing.message.contains("missing 'nats'"))
        let badName = try #require(throws: ConfigurationError.self) {
            try BrokerConfiguration.parse(yaml: "cluster: {nats: [\"nats://a:1\"], node: \"a b\"}")
        }
        #expect(badName.path == "cluster.node")
        #expect(badName.message.contains("has ' '"))
        let unknown = try #require(throws: ConfigurationError.self) {
            try BrokerConfiguration.parse(yaml: "cluster: {nats: [\"nats://a:1\"], nodes: 3}")
        }
        #expect(unknown.message.contains("nodes"))
    }

    @Test func theDefaultNodeNameIsValid() {
        let name = ClusterSettings.defaultNodeName()
        #expect(ClusterSettings.problem(withNodeName: name) == nil, "\(name)")
        #expect(name.hasSuffix("-\(ProcessInfo.processInfo.processIdentifier)"))
    }

    @Test func serveRefusesANodeNameWithoutACluster() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("no-cluster-\(UUID().uuidString).yml").path
        try "listen: {port: 0}\n".write(toFile: file, atomically: true, encoding: .utf8)
        let outcome = try await HubCLIExecutable.run(["serve", "--config", file, "--node", "a"])
        let output = outcome.errors
        #expect(outcome.status == 1)
        #expect(output.contains("--node a needs --cluster or the file's cluster section"), "\(output)")
    }

    @Test func serveRefusesABadClusterFlagNamingTheURL() async throws {
        let outcome = try await HubCLIExecutable.run(["serve", "--port", "0", "--cluster", "nats://127.0.0.1:4222,nats://127.0.0.1:port"])
        let output = outcome.errors
        #expect(outcome.status == 64)
        #expect(output.contains("--cluster: 'nats://127.0.0.1:port': the port 'port' is not a number between 1 and 65535"), "\(output)")
    }
}
