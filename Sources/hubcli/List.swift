import Foundation
import ArgumentParser
import HubClient
import HubValue
import HubWire

/// `hubcli list`: prints the hub's catalog.
struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the hub's subjects, pipelines and triggers.",
        discussion: """
            Prints an aligned table, one row per name: its TYPE (subject, pipeline
            or trigger), its KIND (passthrough or currentValue for subjects), its
            STATE (open, completed or failed for subjects: a finished subject takes
            no values until 'hubcli delete NAME'), and how many SUBSCRIBERS it has.
            Rows are grouped by type and sorted by name; a last line gives the hub's
            open connections. With --json, prints the catalog as one line of JSON:
            {"subjects":[{"name","kind","value"?,"subscribers","state"}],
             "pipelines":[{"name","subscribers"}],"triggers":[{"name","subscribers"}],
             "connections"}.

            \(ClientExit.help)
            """
    )

    @OptionGroup var connection: ClientOptions

    @Flag(help: "Print the catalog as JSON instead of a table.")
    var json = false

    func run() async throws {
        let asJSON = json
        try await ClientCommand.run(connection) { client throws(HubClientError) in
            let catalog = try await client.list()
            if asJSON {
                Output.value(List.json(catalog))
            } else {
                for line in List.table(catalog) { Output.line(line) }
            }
        }
    }

    /// The catalog as the protocol writes it, without `op` and `ack`.
    static func json(_ catalog: Catalog) -> Value {
        let message = ServerMessage.catalog(ack: 0, catalog).jsonBytes()
        guard case var .object(fields) = (try? Value.parse(message)) ?? .null else { return .null }
        fields.removeValue(forKey: "op")
        fields.removeValue(forKey: "ack")
        return .object(fields)
    }

    /// The aligned table's lines (a header, then one row per name).
    static func table(_ catalog: Catalog) -> [String] {
        let sorted = catalog.sorted()
        var rows: [[String]] = [["TYPE", "NAME", "KIND", "STATE", "SUBSCRIBERS"]]
        for subject in sorted.subjects {
            rows.append(["subject", subject.name, subject.kind.rawValue, subject.state.rawValue, String(subject.subscribers)])
        }
        for pipeline in sorted.pipelines {
            rows.append(["pipeline", pipeline.name, "-", "-", String(pipeline.subscribers)])
        }
        for trigger in sorted.triggers {
            rows.append(["trigger", trigger.name, "-", "-", String(trigger.subscribers)])
        }
        let connections = catalog.connections.map { "connections: \($0)" }
        if rows.count == 1 { return ["(no subjects, pipelines or triggers)"] + (connections.map { [$0] } ?? []) }
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max() ?? 0 }
        let lines = rows.map { row in
            let padded = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }
            return padded.joined(separator: "  ")
        }
        return lines + (connections.map { [$0] } ?? [])
    }
}
