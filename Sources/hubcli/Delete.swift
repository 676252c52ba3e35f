import ArgumentParser
import HubClient

/// `hubcli delete`: deletes a subject so that it can start over.
struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete a subject: a completed or failed one can be used again.",
        discussion: """
            Sends 'delete' for NAME and waits for the hub's ack. The subject's live
            subscribers complete; a subject declared in the broker's configuration
            starts over with its settings and initial value, one created on first use
            is gone until it is used again. Needs the permission to publish to NAME.
            A trigger's or pipeline's name fails with 'not_found'.

            \(ClientExit.help)
            """
    )

    @OptionGroup var connection: ClientOptions

    @Argument(help: ArgumentHelp("The subject to delete.", valueName: "name"))
    var name: String

    func run() async throws {
        try await ClientCommand.run(connection) { client throws(HubClientError) in
            try await client.delete(name)
        }
    }
}
