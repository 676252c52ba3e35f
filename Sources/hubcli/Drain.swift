import ArgumentParser
import HubClient

/// `hubcli drain`: puts the broker in lame-duck mode.
struct Drain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Drain the broker (lame duck): refuse new connections, move clients away, stop.",
        discussion: """
            Sends the admin op 'drain' (needs the admin permission) and waits for the
            hub's ack. The broker then answers /ready with 503, refuses new
            connections, ends each live subscription with 'shutting_down' and closes
            the connections with 1012 (service restart) a few at a time over the grace
            period, so that clients reconnect to another broker; when the last has
            gone it stops. The same as sending SIGUSR2 to 'hubcli serve'.

            \(ClientExit.help)
            """
    )

    @OptionGroup var connection: ClientOptions

    @Option(help: ArgumentHelp(
        "Seconds over which the connections are closed (default: the broker's drainGrace, 30 s).",
        valueName: "seconds"))
    var grace: Double?

    func validate() throws {
        if let grace, !(0...3600).contains(grace) {
            throw ValidationError("--grace must be between 0 and 3600 seconds, got \(grace)")
        }
    }

    func run() async throws {
        let grace = self.grace.map { Duration.milliseconds(Int64(($0 * 1000).rounded())) }
        try await ClientCommand.run(connection) { client throws(HubClientError) in
            try await client.drain(grace: grace)
        }
        Output.message("hubcli: the broker is draining")
    }
}
