import ArgumentParser
import HubClient

/// `hubcli complete`: completes a subject.
struct Complete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Complete a subject: its subscribers finish, later sends fail.",
        discussion: """
            Sends 'complete' for NAME and waits for the hub's ack. Every subscriber
            receives the completion after the values already buffered for it.
            Completing an already completed subject fails with 'completed'.

            \(ClientExit.help)
            """
    )

    @OptionGroup var connection: ClientOptions

    @Argument(help: ArgumentHelp("The subject to complete.", valueName: "name"))
    var name: String

    func run() async throws {
        try await ClientCommand.run(connection) { client throws(HubClientError) in
            try await client.complete(name)
        }
    }
}
