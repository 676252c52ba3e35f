import ArgumentParser
import HubClient
import HubValue

/// `hubcli send`: sends JSON values into a subject and waits for every ack.
struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send JSON values into a subject.",
        discussion: """
            Each VALUE argument is one JSON value (quote it for the shell:
            hubcli send prices '{"bid": 101.5}'; a string needs JSON's quotes too:
            hubcli send chat '"hello"'). With no VALUE, values are read
            from standard input, one JSON value per line; blank lines are skipped.
            Every value is sent in order and acknowledged by the hub before the
            command exits 0.

            Bad JSON: arguments are all checked before anything is sent, so a bad
            argument sends nothing. On standard input, the values before a bad
            line have been sent (and acknowledged); hubcli stops at the bad line,
            prints 'line N: invalid JSON at byte K: ...' and exits 1 without
            reading further.

            A name that does not exist is created (unless the hub disables
            auto-creation); sending to a completed subject fails with 'completed'.

            \(ClientExit.help)
            """
    )

    @OptionGroup var connection: ClientOptions

    @Argument(help: ArgumentHelp("The subject to send to.", valueName: "name"))
    var name: String

    @Argument(help: ArgumentHelp("JSON values to send (none: read JSON lines from standard input).", valueName: "value"))
    var values: [String] = []

    func run() async throws {
        var parsed: [Value] = []
        for (index, text) in values.enumerated() {
            switch JSONArgument.parse(text, origin: "argument \(index + 1)") {
            case let .success(value): parsed.append(value)
            case let .failure(problem): throw ClientExit.badInput(problem.message)
            }
        }
        let client: HubClient
        do throws(HubClientError) {
            client = try await connection.connect()
        } catch {
            throw ClientExit.report(error)
        }
        var sent = 0
        var badLine: String?
        do throws(HubClientError) {
            if values.isEmpty {
                var lineNumber = 0
                while let line = readLine(strippingNewline: true) {
                    lineNumber += 1
                    if line.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) { continue }
                    switch JSONArgument.parse(line, origin: "line \(lineNumber)", argument: false) {
                    case let .success(value):
                        try await client.send(value, to: name)
                        sent += 1
                    case let .failure(problem):
                        badLine = problem.message
                    }
                    if badLine != nil { break }
                }
            } else {
                for value in parsed {
                    try await client.send(value, to: name)
                    sent += 1
                }
            }
        } catch {
            await client.close()
            if sent > 0 { Output.status("sent \(sent) value\(sent == 1 ? "" : "s") before the failure") }
            throw ClientExit.report(error)
        }
        await client.close()
        if let badLine {
            Output.status("sent \(sent) value\(sent == 1 ? "" : "s") before the bad line")
            throw ClientExit.badInput(badLine)
        }
    }
}
