import ArgumentParser
import Foundation
import HubClient
import HubValue

/// `hubcli top`: a live view of the broker.
struct Top: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A live view of the broker's figures and busiest names.",
        discussion: """
            Subscribes to $sys.stats (needs the admin permission) and redraws the
            summary of 'hubcli stats' and the busiest names (by published + delivered
            per second) at each update (every second). On a terminal the screen is
            redrawn in place; when standard output is not a terminal (a pipe, a file)
            each update is printed as plain lines without control characters,
            separated by a blank line, so that it can be logged or filtered.
            --count N stops after N updates. Ctrl-C ends it.

            \(ClientExit.help)
            """
    )

    @OptionGroup var connection: ClientOptions

    @Option(help: "Stop after this many updates (default: run until interrupted).")
    var count: Int?

    @Option(help: "How many names to show (default: 20).")
    var rows: Int = 20

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1, got \(count)") }
        if rows < 0 { throw ValidationError("--rows must be 0 or more, got \(rows)") }
    }

    func run() async throws {
        let terminal = isatty(STDOUT_FILENO) == 1
        let limit = count
        let shown = rows
        try await ClientCommand.run(connection) { client throws(HubClientError) in
            var updates = 0
            var values = client.values(of: "$sys.stats", prefetch: 2).makeAsyncIterator()
            while let stats = try await values.next() {
                updates += 1
                let lines = StatsView.summary(stats) + StatsView.table(stats, limit: shown)
                let text: String
                if terminal {
                    let time = Date().formatted(date: .omitted, time: .standard)
                    // Home, clear; then the view.
                    text = "\u{1B}[H\u{1B}[2J" + "hubcli top  \(time)  (\(updates))\n" + lines.joined(separator: "\n")
                } else {
                    text = (updates > 1 ? "\n" : "") + lines.joined(separator: "\n")
                }
                guard Output.line(text) else { return }
                if let limit, updates >= limit { return }
            }
        }
    }
}
