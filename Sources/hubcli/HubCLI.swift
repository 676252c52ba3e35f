import ArgumentParser
import Foundation
import HubWire

/// `hubcli`: the Reactive Hub broker launcher and command-line client.
@main
struct HubCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hubcli",
        abstract: "Reactive Hub: a broker of subjects, triggers and pipelines with Combine's demand over WebSocket.",
        discussion: """
            'hubcli serve' starts the broker (ws://127.0.0.1:7420 by default). The other
            commands are its client: they connect to --url (default $HUB_URL, else
            ws://127.0.0.1:7420), authenticate with --token, --token-file or
            $HUB_TOKEN when given, and speak protocol v1. Values are JSON (a string
            too: '"hello"'); data goes to standard output, one compact JSON value
            per line, and status and errors to standard error.

            Examples:
              hubcli serve --port 7420
              hubcli subscribe prices --window 4 --count 100
              hubcli send prices 101.5 '{"bid": 102}'
              hubcli trigger refresh --key '{"user": 7}'
              hubcli list --json
              hubcli delete orders        (a completed subject starts over)
              hubcli stats; hubcli top    (the broker's figures, once or live)
              hubcli drain --grace 60     (lame duck: clients move elsewhere)

            Exit status: 0 on success (also when standard output's reader goes
            away, as with '| head'); 1 for bad input (an invalid URL, bad JSON, a
            configuration error, a port already in use); 2 when the hub cannot be
            reached, the connection is lost or an answer times out; 3 when the hub
            answers with an error; 64 for a usage error (an unknown command or
            option, a missing or invalid argument).
            """,
        version: BuildInfo.versionLine,
        subcommands: [
            Serve.self, Subscribe.self, Send.self, Get.self, Complete.self, Fail.self, Delete.self, Trigger.self, List.self,
            Stats.self, Top.self, Drain.self, Bench.self,
        ]
    )

    /// The entry point: ignores SIGPIPE (a closed standard output is an error
    /// that ends a command quietly, see ``Output``), answers a mistyped command
    /// with the closest one, then runs the command.
    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let first = arguments.first, let message = unknownCommand(first) {
            Output.message("Error: \(message)\nUsage: hubcli <subcommand>\n  See 'hubcli --help' for the commands.")
            Self.exit(withError: ExitCode(ClientExit.usage))
        }
        await main(arguments)
    }

    /// The message for a first argument that is neither an option nor a command, or nil.
    static func unknownCommand(_ word: String) -> String? {
        let commands = configuration.subcommands.map { $0._commandName } + ["help"]
        guard !word.hasPrefix("-"), !commands.contains(word) else { return nil }
        var message = "unknown command '\(word)'"
        if let near = NameSuggestion.closest(to: word, among: commands) { message += "; did you mean '\(near)'?" }
        return message
    }
}
