import ArgumentParser
import HubClient
import HubValue
import HubWire

/// `hubcli get`: prints the current value of one key of a table subject.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the current value of one key of a table subject.",
        discussion: """
            Sends 'get' for KEY in the table subject TABLE and prints the key's
            current value as one line of JSON. A key the table does not hold prints
            nothing and exits with status 3 ('not_found: ...' on standard error), as
            does a name that is not a table subject. Keys are text: 7 and "7" are
            the same key. Needs the permission to subscribe to TABLE.

            \(ClientExit.help)
            """
    )

    @OptionGroup var connection: ClientOptions

    @Argument(help: ArgumentHelp("The table subject.", valueName: "table"))
    var table: String

    @Argument(help: ArgumentHelp("The key to read.", valueName: "key"))
    var key: String

    func run() async throws {
        let (table, key) = (self.table, self.key)
        try await ClientCommand.run(connection) { client throws(HubClientError) in
            guard let value = try await client.get(.string(key), from: table) else {
                // Reported as the hub's not_found would be (status 3): the answer is the hub's.
                throw HubClientError(server: HubError(.notFound, "table '\(table)' has no key \(Value.string(key).jsonString())"))
            }
            Output.value(value)
        }
    }
}
