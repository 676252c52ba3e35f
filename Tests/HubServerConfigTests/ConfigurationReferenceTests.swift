import Foundation
import HubServer
import Testing

/// Protocol/CONFIGURATION.md has one row for every key the broker reads and
/// none for others, and each row's example is a valid configuration of its key.
@Suite("Configuration reference")
struct ConfigurationReferenceTests {
    static let reference = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/CONFIGURATION.md")

    /// Every key path the reader accepts; `<name>` stands for a declared name.
    static var keyPaths: Set<String> {
        var paths = Set(BrokerConfiguration.topLevelKeys)
        paths.formUnion(BrokerConfiguration.listenKeys.map { "listen.\($0)" })
        paths.formUnion(BrokerConfiguration.tlsKeys.map { "listen.tls.\($0)" })
        paths.formUnion(BrokerConfiguration.limitsKeys.map { "limits.\($0)" })
        paths.formUnion(BrokerConfiguration.pipelineLimitsKeys.map { "limits.pipelines.\($0)" })
        paths.formUnion(BrokerConfiguration.perConnectionKeys.map { "limits.perConnection.\($0)" })
        paths.formUnion(BrokerConfiguration.authKeys.map { "auth.\($0)" })
        paths.formUnion(BrokerConfiguration.identityKeys.map { "auth.identities.<name>.\($0)" })
        paths.formUnion(BrokerConfiguration.denyKeys.map { "auth.identities.<name>.deny.\($0)" })
        paths.formUnion(BrokerConfiguration.jwtKeys.map { "auth.jwt.\($0)" })
        paths.formUnion(BrokerConfiguration.perIdentityKeys.map { "limits.perIdentity.\($0)" })
        paths.formUnion(BrokerConfiguration.subjectKeys.map { "subjects.<name>.\($0)" })
        paths.formUnion(BrokerConfiguration.pipelineKeys.map { "pipelines.<name>.\($0)" })
        paths.formUnion(BrokerConfiguration.storageKeys.map { "storage.\($0)" })
        paths.formUnion(BrokerConfiguration.defaultsKeys.map { "defaults.\($0)" })
        paths.formUnion(BrokerConfiguration.historyKeys.map { "defaults.history.\($0)" })
        paths.formUnion(BrokerConfiguration.historyKeys.map { "subjects.<name>.history.\($0)" })
        paths.formUnion(BrokerConfiguration.adminKeys.map { "admin.\($0)" })
        paths.formUnion(BrokerConfiguration.metricsKeys.map { "metrics.\($0)" })
        paths.formUnion(BrokerConfiguration.clusterKeys.map { "cluster.\($0)" })
        return paths
    }

    /// A table row: its key path and its example.
    struct Row {
        var key: String
        var example: String
    }

    /// The rows of the reference's tables (`| \`key\` | type | default | \`example\` | meaning |`).
    static func rows() throws -> [Row] {
        let text = try String(contentsOf: reference, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line -> Row? in
            guard line.hasPrefix("| `") else { return nil }
            // Cells split on pipes that are not escaped (`\|` inside code spans).
            var cells: [String] = []
            var cell = ""
            var previous: Character = " "
            for character in line.dropFirst() {
                if character == "|", previous != "\\" {
                    cells.append(cell.trimmingCharacters(in: .whitespaces))
                    cell = ""
                } else {
                    cell.append(character)
                }
                previous = character
            }
            guard cells.count >= 4 else { return nil }
            let unquote = { (text: String) in
                text.trimmingCharacters(in: CharacterSet(charactersIn: "`")).replacingOccurrences(of: "\\|", with: "|")
            }
            return Row(key: unquote(cells[0]), example: unquote(cells[3]))
        }
    }

    @Test func everyKeyTheBrokerReadsHasExactlyOneRow() throws {
        let documented = try Self.rows().map(\.key)
        let missing = Self.keyPaths.subtracting(documented).sorted()
        #expect(missing.isEmpty, "Protocol/CONFIGURATION.md has no row for \(missing)")
        let unknown = Set(documented).subtracting(Self.keyPaths).sorted()
        #expect(unknown.isEmpty, "Protocol/CONFIGURATION.md documents keys the broker does not read: \(unknown)")
        let repeated = Dictionary(grouping: documented, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        #expect(repeated.isEmpty, "keys with more than one row: \(repeated)")
    }

    /// What an example needs around it to be a whole configuration.
    static func context(of key: String) -> String {
        if key == "allowAdHocPipelines" { return "auth: {tokens: [dashboard-secret]}\n" }
        if key == "subjects.<name>.durable" { return "storage: {path: /tmp/hub-example-storage}\n" }
        return ""
    }

    /// What an example needs beside it, at its own level, to be a whole configuration.
    static func siblings(of key: String) -> String? {
        if key.hasPrefix("auth.jwt."), key != "auth.jwt.keys" { return "keys: [{algorithm: HS256, secret: s3cret}]" }
        if key.hasPrefix("cluster."), key != "cluster.nats" { return "nats: [\"nats://127.0.0.1:4222\"]" }
        return nil
    }

    @Test func everyExampleIsAValidConfigurationOfItsKey() throws {
        for row in try Self.rows() where !row.key.hasPrefix("listen.tls") && !row.example.isEmpty {
            // listen.tls needs files on disk: TLSConfigurationTests covers it.
            var components = row.key.split(separator: ".").map { $0 == "<name>" ? "example" : String($0) }
            components.removeLast()
            var yaml = Self.context(of: row.key)
            for (depth, component) in components.enumerated() {
                yaml += String(repeating: "  ", count: depth) + component + ":\n"
            }
            let indent = String(repeating: "  ", count: components.count)
            yaml += indent + row.example + "\n"
            if row.key.hasPrefix("pipelines.<name>."), row.key != "pipelines.<name>.source" {
                yaml += indent + "source: \"sequence([1])\"\n"
            }
            if row.key == "storage.sync" || row.key == "storage.shared" { yaml += indent + "path: /tmp/hub-example-storage\n" }
            if let siblings = Self.siblings(of: row.key) { yaml += indent + siblings + "\n" }
            do {
                let configuration = try BrokerConfiguration.parse(yaml: yaml)
                try configuration.check()
            } catch {
                Issue.record("the example of \(row.key) is not a valid configuration:\n\(yaml)\(error)")
            }
        }
    }
}
