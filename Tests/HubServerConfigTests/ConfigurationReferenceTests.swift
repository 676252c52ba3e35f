import Foundation
import HubServer
import HubSQLite
import NetworkTestSupport
import Testing

/// docs/configuration.md has one row for every key the broker reads and none for
/// others, and each row's example is a valid configuration of its key. The keys the
/// broker reads are the lists its reader checks every mapping against
/// (`reader.fields(_:_:allowed:)`); a test below keeps this file's view of those
/// lists in step with the reader's sources.
@Suite("Configuration reference")
struct ConfigurationReferenceTests {
    static let reference = HubCLIExecutable.packageRoot.appendingPathComponent("docs/configuration.md")

    /// The lists of keys the reader accepts, each with the path of the mapping it checks
    /// (`<name>` stands for a declared name) and the list's name in the reader's sources.
    static let keyLists: [(name: String, prefix: String, keys: [String])] = [
        ("topLevelKeys", "", BrokerConfiguration.topLevelKeys),
        ("listenKeys", "listen.", BrokerConfiguration.listenKeys),
        ("httpKeys", "http.", BrokerConfiguration.httpKeys),
        ("corsKeys", "http.cors.", BrokerConfiguration.corsKeys),
        ("tlsKeys", "listen.tls.", BrokerConfiguration.tlsKeys),
        ("limitsKeys", "limits.", BrokerConfiguration.limitsKeys),
        ("pipelineLimitsKeys", "limits.pipelines.", BrokerConfiguration.pipelineLimitsKeys),
        ("perConnectionKeys", "limits.perConnection.", BrokerConfiguration.perConnectionKeys),
        ("perIdentityKeys", "limits.perIdentity.", BrokerConfiguration.perIdentityKeys),
        ("authKeys", "auth.", BrokerConfiguration.authKeys),
        ("identityKeys", "auth.identities.<name>.", BrokerConfiguration.identityKeys),
        ("denyKeys", "auth.identities.<name>.deny.", BrokerConfiguration.denyKeys),
        ("jwtKeys", "auth.jwt.", BrokerConfiguration.jwtKeys),
        ("subjectKeys", "subjects.<name>.", BrokerConfiguration.subjectKeys),
        ("pipelineKeys", "pipelines.<name>.", BrokerConfiguration.pipelineKeys),
        ("checkpointKeys", "pipelines.<name>.checkpoint.", BrokerConfiguration.checkpointKeys),
        ("storageKeys", "storage.", SQLiteStorage.settingKeys),
        ("defaultsKeys", "defaults.", BrokerConfiguration.defaultsKeys),
        ("historyKeys", "defaults.history.", BrokerConfiguration.historyKeys),
        ("historyKeys", "subjects.<name>.history.", BrokerConfiguration.historyKeys),
        ("adminKeys", "admin.", BrokerConfiguration.adminKeys),
        ("metricsKeys", "metrics.", BrokerConfiguration.metricsKeys),
        ("clusterKeys", "cluster.", BrokerConfiguration.clusterKeys),
    ]

    /// The entries of `auth.jwt.keys` are documented in that row's type cell, not as rows.
    static let jwtKeyEntryKeys = ("jwtKeyKeys", "auth.jwt.keys", BrokerConfiguration.jwtKeyKeys)

    /// Every key path the reader accepts; `<name>` stands for a declared name.
    static var keyPaths: Set<String> {
        Set(keyLists.flatMap { list in list.keys.map { list.prefix + $0 } })
    }

    /// A table row: its key path, its type and its example.
    struct Row {
        var key: String
        var type: String
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
            return Row(key: unquote(cells[0]), type: cells[1].replacingOccurrences(of: "\\|", with: "|"), example: unquote(cells[3]))
        }
    }

    @Test func everyKeyTheBrokerReadsHasExactlyOneRow() throws {
        let documented = try Self.rows().map(\.key)
        let missing = Self.keyPaths.subtracting(documented).sorted()
        #expect(missing.isEmpty, "docs/configuration.md has no row for \(missing)")
        let unknown = Set(documented).subtracting(Self.keyPaths).sorted()
        #expect(unknown.isEmpty, "docs/configuration.md documents keys the broker does not read: \(unknown)")
        let repeated = Dictionary(grouping: documented, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        #expect(repeated.isEmpty, "keys with more than one row: \(repeated)")
    }

    /// The reader's sources check mappings against exactly the lists above (and the JWT
    /// key entries' list): a new list of keys in the reader fails here until this test,
    /// and so the reference, covers it.
    @Test func theKeyListsAreEveryListTheReaderChecks() throws {
        let folder = HubCLIExecutable.packageRoot.appendingPathComponent("Sources/HubServer/Configuration")
        var used = Set<String>()
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where !line.contains("static let") {
                var rest = line[...]
                while let range = rest.range(of: "BrokerConfiguration.") {
                    let name = rest[range.upperBound...].prefix { $0.isLetter || $0.isNumber }
                    if name.hasSuffix("Keys") { used.insert(String(name)) }
                    rest = rest[range.upperBound...]
                }
                // The `storage` section's keys are the store kind's (HubSQLite's in hubcli).
                if line.contains("allowed: kind.settingKeys") { used.insert("storageKeys") }
            }
        }
        let known = Set(Self.keyLists.map(\.name)).union([Self.jwtKeyEntryKeys.0])
        #expect(used == known, "the reader checks \(used.subtracting(known).sorted()) that this test does not cover; it lists \(known.subtracting(used).sorted()) the reader does not use")
    }

    @Test func theJWTKeyEntriesAreDocumentedInTheirRow() throws {
        let rows = try Self.rows().filter { $0.key == Self.jwtKeyEntryKeys.1 }
        #expect(rows.count == 1)
        guard let row = rows.first else { return }
        let words = Set(row.type.split(whereSeparator: { !($0.isLetter || $0.isNumber) }).map(String.init))
        for key in Self.jwtKeyEntryKeys.2 {
            #expect(words.contains(key), "the row of auth.jwt.keys does not name its entry key '\(key)': \(row.type)")
        }
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
        if key == "subjects.<name>.maxKeys" || key == "subjects.<name>.maxBytes" { return "kind: table" }
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
                // At the pipeline's level; its checkpoint settings are for a running pipeline.
                let pipelineIndent = String(repeating: "  ", count: 2)
                yaml += pipelineIndent + "source: \"sequence([1])\"\n"
                if row.key.hasPrefix("pipelines.<name>.checkpoint") || row.key == "pipelines.<name>.restartFrom" {
                    yaml += pipelineIndent + "run: true\n"
                }
            }
            if ["storage.sync", "storage.shared", "storage.onCorruption"].contains(row.key) {
                yaml += indent + "path: /tmp/hub-example-storage\n"
            }
            if let siblings = Self.siblings(of: row.key) { yaml += indent + siblings + "\n" }
            do {
                let configuration = try parseBroker(yaml: yaml)
                try configuration.check()
            } catch {
                Issue.record("the example of \(row.key) is not a valid configuration:\n\(yaml)\(error)")
            }
        }
    }
}
