import ArgumentParser

/// `hubcli`: the Reactive Hub broker launcher and command-line client.
@main
struct HubCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hubcli",
        abstract: "Reactive Hub: a broker of subjects, triggers and pipelines with Combine's demand over WebSocket.",
        discussion: """
            'hubcli serve' starts the broker (ws://127.0.0.1:7420 by default). The other
            commands are its client: they connect to --url and speak protocol v1.
            """,
        subcommands: [Serve.self, Bench.self]
    )
}
