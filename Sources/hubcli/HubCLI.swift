import ArgumentParser
import HubEngine

/// `hubcli`: the Reactive Hub broker launcher and command-line client.
@main
struct HubCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hubcli",
        abstract: "Reactive Hub: a broker of subjects, triggers and pipelines with Combine's demand over WebSocket.",
        discussion: """
            'hubcli serve' starts the broker (ws://127.0.0.1:7420 by default). The other
            commands are its client: they connect to --url (default
            ws://127.0.0.1:7420), authenticate with --token when given, and speak
            protocol v1. Values are JSON; data goes to standard output, one compact
            JSON value per line, and status and errors to standard error.

            Examples:
              hubcli serve --port 7420
              hubcli subscribe prices --window 4 --count 100
              hubcli send prices 101.5 '{"bid": 102}'
              hubcli trigger refresh --key '{"user": 7}'
              hubcli list --json
            """,
        subcommands: [Serve.self, Subscribe.self, Send.self, Complete.self, Fail.self, Trigger.self, List.self, Bench.self]
    )
}
