import ArgumentParser
import HubClient
import HubTransport
import Logging

/// The options every client command takes: where the hub is and how to authenticate.
struct ClientOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The hub's WebSocket URL (ws://host:port/path or wss://host:port/path).", valueName: "url"))
    var url = "ws://127.0.0.1:7420"

    @Option(help: ArgumentHelp(
        "A bearer token for a hub that requires authentication (sent as 'Authorization: Bearer <token>').",
        valueName: "token"))
    var token: String?

    @Flag(help: "With a wss:// URL, accept a self-signed server certificate (tests and development only).")
    var insecure = false

    @Option(help: ArgumentHelp("With a wss:// URL, trust the CA certificates of this PEM file instead of the system's.", valueName: "path"))
    var caFile: String?

    @Option(help: ArgumentHelp("Seconds to wait for the connection and for each answer.", valueName: "seconds"))
    var timeout: Double = 10

    func validate() throws {
        guard timeout > 0, timeout.isFinite else {
            throw ValidationError("--timeout must be a positive number of seconds, got \(timeout)")
        }
    }

    /// A connected client (no reconnects: a command is one session).
    func connect() async throws(HubClientError) -> HubClient {
        let configuration = HubClient.Configuration(
            token: token, clientName: "hubcli",
            connectTimeout: .milliseconds(Int64(timeout * 1000)), requestTimeout: .milliseconds(Int64(timeout * 1000)),
            reconnect: .disabled, tls: ClientTLS(allowsSelfSigned: insecure, caFilePath: caFile))
        // The command reports failures itself: the client's own log stays quiet.
        var logger = Logger(label: "hubcli.client")
        logger.logLevel = .critical
        return try await HubClient.connect(to: url, configuration: configuration, logger: logger)
    }
}

/// How client commands end when something fails: a one-line message on standard
/// error and a documented exit status.
enum ClientExit {
    /// Bad input: an invalid URL, bad JSON, a bad option value.
    static let badInput: Int32 = 1
    /// The hub could not be reached, the connection was lost, or it timed out.
    static let connection: Int32 = 2
    /// The hub answered with an error (its code is printed).
    static let server: Int32 = 3

    /// The exit-status paragraph of every client command's help.
    static let help = """
        Exit status: 0 on success; 1 for bad input (an invalid --url, bad JSON);
        2 when the hub cannot be reached, the connection is lost or an answer
        times out; 3 when the hub answers with an error (its code, such as
        not_found or completed, is printed on standard error).
        """

    /// Prints `error` on standard error and returns the exit status for it.
    static func report(_ error: HubClientError) -> ExitCode {
        Output.status(describe(error))
        return ExitCode(status(of: error))
    }

    /// The status for `error`.
    static func status(of error: HubClientError) -> Int32 {
        if error.serverError != nil { return server }
        if error.code == .invalidURL { return badInput }
        return connection
    }

    /// `code: message` for server errors (with their data), the message otherwise.
    static func describe(_ error: HubClientError) -> String {
        guard error.serverError != nil else { return error.message }
        var text = "\(error.code.rawValue): \(error.message)"
        if let data = error.data { text += " (data: \(data.jsonString()))" }
        return text
    }

    /// Reports a bad input and returns its exit status.
    static func badInput(_ message: String) -> ExitCode {
        Output.status(message)
        return ExitCode(badInput)
    }
}
