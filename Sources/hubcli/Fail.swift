import ArgumentParser
import HubEngine
import HubValue
import HubClient

/// `hubcli fail`: fails a subject with a JSON error value.
struct Fail: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fail a subject with a JSON error value.",
        discussion: """
            Sends 'fail' for NAME with ERROR (any JSON value, for example
            '{"reason": "feed down"}') and waits for the hub's ack. Every subscriber
            fails with code 'failed' and ERROR as the error's data.

            \(ClientExit.help)
            """
    )

    @OptionGroup var connection: ClientOptions

    @Argument(help: ArgumentHelp("The subject to fail.", valueName: "name"))
    var name: String

    @Argument(help: ArgumentHelp("The error, as JSON.", valueName: "error-json"))
    var error: String

    func run() async throws {
        let value: HubValue.Value
        switch JSONArgument.parse(error, origin: "argument 2 (error)") {
        case let .success(parsed): value = parsed
        case let .failure(problem): throw ClientExit.badInput(problem.message)
        }
        try await ClientCommand.run(connection) { client throws(HubClientError) in
            try await client.fail(name, error: value)
        }
    }
}
