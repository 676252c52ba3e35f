import ArgumentParser
import HubClient
import HubValue

/// `hubcli stats`: the broker's figures once.
struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the broker's figures once (the latest $sys.stats).",
        discussion: """
            Subscribes to the system subject $sys.stats (needs the admin permission),
            takes its current value (the broker publishes it every second) and prints
            a summary: uptime, connections, subscriptions, queued bytes, event-loop
            lag, totals and rates of published and delivered values and bytes,
            drops, slow consumers, auth failures, protocol errors and pipeline
            failures; then one row per name. With --json, prints the value itself as
            one line of JSON (PROTOCOL.md, "System subjects").

            \(ClientExit.help)
            """
    )

    @OptionGroup var connection: ClientOptions

    @Flag(help: "Print the $sys.stats value as JSON.")
    var json = false

    func run() async throws {
        let asJSON = json
        try await ClientCommand.run(connection) { client throws(HubClientError) in
            var values = client.values(of: "$sys.stats", prefetch: 1).makeAsyncIterator()
            guard let stats = try await values.next() else {
                throw HubClientError(code: .protocolError, message: "$sys.stats ended without a value")
            }
            if asJSON {
                Output.value(stats)
            } else {
                for line in StatsView.summary(stats) + StatsView.table(stats) { Output.line(line) }
            }
        }
    }
}
