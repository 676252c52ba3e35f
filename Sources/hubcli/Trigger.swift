import ArgumentParser
import HubClient
import HubEngine
import HubValue

/// `hubcli trigger`: activates a trigger.
struct Trigger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Activate a trigger, optionally for a key.",
        discussion: """
            Sends 'trigger' for NAME and waits for the hub's ack. Subscribers of the
            trigger receive the key (null without --key); pipelines that start with
            trigger(NAME) run once. An unknown name is created as a trigger (unless
            the hub disables auto-creation); a subject's name fails with 'not_found'.

            \(ClientExit.help)
            """
    )

    @OptionGroup var connection: ClientOptions

    @Argument(help: ArgumentHelp("The trigger to activate.", valueName: "name"))
    var name: String

    @Option(help: ArgumentHelp("The activation's key, as JSON.", valueName: "json"))
    var key: String?

    func run() async throws {
        var keyValue: Value?
        if let key {
            switch JSONArgument.parse(key, origin: "--key") {
            case let .success(parsed): keyValue = parsed
            case let .failure(problem): throw ClientExit.badInput(problem.message)
            }
        }
        let activationKey = keyValue
        try await ClientCommand.run(connection) { client throws(HubClientError) in
            try await client.trigger(name, key: activationKey)
        }
    }
}
