import ArgumentParser
import Foundation
import HubCore
import HubServer
import HubTransport
import Logging

/// `hubcli serve`: runs the broker until SIGINT or SIGTERM.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the broker.",
        discussion: """
            Listens for WebSocket connections speaking protocol v1 (subprotocol hub.v1).
            With no configuration every name is created on first use. Logs go to
            standard error. SIGINT or SIGTERM stops the broker cleanly: every
            subscriber gets close 1001.
            """
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one and logs it).")
    var port = 7420

    @Option(help: "The log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        guard (0...65535).contains(port) else {
            throw ValidationError("--port must be between 0 and 65535, got \(port)")
        }
    }

    func run() async throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "hubcli.serve")
        let configuration = HubService.Configuration(host: host, port: port)
        let service: HubService
        let bound: Int
        do {
            service = try HubService(configuration: configuration, logger: logger)
            bound = try await service.start()
        } catch {
            throw CLIError("cannot start the broker on \(host):\(port): \(error)")
        }
        FileHandle.standardError.write(Data("hubcli: listening on ws://\(host):\(bound)/\n".utf8))
        let signal = await SignalWaiter.wait(for: [SIGINT, SIGTERM])
        logger.info("stopping", metadata: ["signal": "\(signal)"])
        await service.shutdown()
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
