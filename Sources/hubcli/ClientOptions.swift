import ArgumentParser
import Foundation
import HubClient
import HubTransport
import Logging

/// The options every client command takes: where the hub is and how to authenticate.
struct ClientOptions: ParsableArguments {
    /// The URL without --url or HUB_URL.
    static let defaultURL = "ws://127.0.0.1:7420"

    @Option(help: ArgumentHelp(
        "The hub's WebSocket URL, ws://host:port/path or wss://host:port/path; several, comma-separated, for the nodes of a cluster (the first that answers is used) (default: $HUB_URL, else ws://127.0.0.1:7420).",
        valueName: "url"))
    var url: String?

    @Option(help: ArgumentHelp(
        "A bearer token for a hub that requires one. Other users can see it in 'ps': prefer --token-file or HUB_TOKEN.",
        valueName: "token"))
    var token: String?

    @Option(help: ArgumentHelp(
        "A file whose first line is the bearer token (default: $HUB_TOKEN, if set).", valueName: "path"))
    var tokenFile: String?

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
        if token != nil, tokenFile != nil {
            throw ValidationError("give --token or --token-file, not both")
        }
        if let tokenFile, case let .failure(problem) = Self.readToken(from: tokenFile) {
            throw ValidationError(problem.message)
        }
    }

    /// The URL: --url, else HUB_URL, else the default.
    var resolvedURL: String {
        url ?? Self.environment("HUB_URL") ?? Self.defaultURL
    }

    /// The token: --token, else the --token-file's, else HUB_TOKEN, else none.
    func resolvedToken() throws(HubClientError) -> String? {
        if let token { return token }
        if let tokenFile {
            switch Self.readToken(from: tokenFile) {
            case let .success(token): return token
            case let .failure(problem): throw HubClientError(code: ClientExit.badTokenFile, message: problem.message)
            }
        }
        return Self.environment("HUB_TOKEN")
    }

    /// A connected client (no reconnects unless `reconnect`: a command is one session).
    func connect(reconnect: ReconnectPolicy = .disabled, batch: Bool = true) async throws(HubClientError) -> HubClient {
        let urls = resolvedURL.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard urls.count > 1 else {
            return try await HubClient.connect(
                to: resolvedURL, configuration: configuration(reconnect: reconnect, batch: batch), logger: Self.quietLogger)
        }
        // The nodes of a cluster: the first that answers; with --reconnect, the next when it goes.
        return try await HubClient.connect(
            to: urls, configuration: configuration(reconnect: reconnect, batch: batch), logger: Self.quietLogger)
    }

    /// The client configuration these options describe.
    func configuration(reconnect: ReconnectPolicy = .disabled, batch: Bool = true) throws(HubClientError) -> HubClient.Configuration {
        HubClient.Configuration(
            token: try resolvedToken(), clientName: "hubcli", batch: batch,
            connectTimeout: .milliseconds(Int64(timeout * 1000)), requestTimeout: .milliseconds(Int64(timeout * 1000)),
            reconnect: reconnect, tls: ClientTLS(allowsSelfSigned: insecure, caFilePath: caFile))
    }

    /// The command reports failures itself: the client's own log stays quiet.
    static var quietLogger: Logger {
        var logger = Logger(label: "hubcli.client")
        logger.logLevel = .critical
        return logger
    }

    /// A variable of the environment, unless unset or empty.
    static func environment(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// A problem with the token file, as the message to print.
    struct TokenFileProblem: Error {
        var message: String
    }

    /// The first line of the file at `path`, trimmed; a problem when it cannot be read or holds no token.
    static func readToken(from path: String) -> Result<String, TokenFileProblem> {
        let contents: String
        do {
            contents = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            let reason = FileManager.default.fileExists(atPath: path) ? "it cannot be read" : "no such file"
            return .failure(TokenFileProblem(message: "--token-file '\(path)': \(reason)"))
        }
        let line = contents.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let token = line.trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty else {
            return .failure(TokenFileProblem(message: "--token-file '\(path)': the file has no token on its first line"))
        }
        return .success(token)
    }
}

/// How client commands end when something fails: a one-line message on standard
/// error and a documented exit status.
enum ClientExit {
    /// Bad input: an invalid URL, bad JSON, a token file gone since the options were read.
    static let badInput: Int32 = 1
    /// The hub could not be reached, the connection was lost, or it timed out.
    static let connection: Int32 = 2
    /// The hub answered with an error (its code is printed).
    static let server: Int32 = 3
    /// A usage error: an unknown command or option, a missing or invalid argument
    /// (ArgumentParser's EX_USAGE).
    static let usage: Int32 = ExitCode.validationFailure.rawValue
    /// The code of a token file that cannot be read when connecting.
    static let badTokenFile = HubClientError.Code(rawValue: "bad_token_file")

    /// The exit-status paragraph of every client command's help.
    static let help = """
        Environment: HUB_URL is the default --url, HUB_TOKEN the token when there
        is no --token or --token-file.

        Exit status: 0 on success (also when standard output's reader goes away,
        as with '| head'); 1 for bad input (an invalid URL, bad JSON); 2 when the
        hub cannot be reached, the connection is lost or an answer times out; 3
        when the hub answers with an error (its code, such as not_found or
        completed, is printed on standard error) or no longer holds the history
        a subscription asked for (resume_failed); 64 for a usage error (an
        unknown command or option, a missing or invalid argument).
        """

    /// Prints `error` on standard error and returns the exit status for it.
    static func report(_ error: HubClientError) -> ExitCode {
        Output.status(describe(error))
        return ExitCode(status(of: error))
    }

    /// The status for `error`.
    static func status(of error: HubClientError) -> Int32 {
        if error.serverError != nil || error.code == .resumeFailed { return server }
        if error.code == .invalidURL || error.code == badTokenFile { return badInput }
        return connection
    }

    /// `code: message` for server errors (with their data), the message otherwise.
    static func describe(_ error: HubClientError) -> String {
        guard error.serverError != nil || error.code == .resumeFailed else { return error.message }
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
