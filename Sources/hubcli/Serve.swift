import ArgumentParser
import Foundation
import HubCluster
import HubServer
import HubSQLite
import HubTransport
import Logging
import ServiceLifecycle
import UnixSignals

/// `hubcli serve`: runs the broker until SIGINT or SIGTERM.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the broker.",
        discussion: """
            Listens for WebSocket connections speaking protocol v1 (subprotocol hub.v1).
            With no configuration every name is created on first use. --config FILE
            reads a YAML configuration (see examples/hub.yml): listen address, limits,
            auth, subjects, triggers and named pipelines; a mistake in it is reported
            as FILE:LINE:COLUMN: key.path: message and the broker does not start.
            --host and --port override the file's listen address; --tls-certificate
            and --tls-private-key (given together) serve wss:// and override the
            file's listen.tls. --check-config
            validates the file (pipelines compiled included), prints 'FILE: ok' or
            the error, and exits 0 or 1 without serving. Logs go to standard error.
            SIGINT or SIGTERM stops the broker cleanly: every live subscription ends
            with error shutting_down, then every connection gets close 1001.

            Operating it: the WebSocket port also answers plain HTTP: /health (200
            while alive), /ready (200 while serving, 503 while starting, draining or
            stopping), /metrics (Prometheus text; with auth, send an accepted token as
            Authorization: Bearer) and the dashboard at /dashboard/; the file's
            'admin' key moves all but /health and /ready to a separate listener.
            SIGHUP re-reads --config without dropping a connection (auth, limits,
            new subjects and triggers, named pipelines); a file with a mistake is
            logged with its line and the running configuration is kept. SIGUSR2
            (or 'hubcli drain') drains: /ready turns 503, new connections are
            refused, clients are closed with 1012 a few at a time over the grace
            period (the file's drainGrace, 30 s) and the broker then exits 0.
            Logs go to standard error at --log-level (info: connections opened
            and closed, reloads, drains; warning: slow consumers, auth failures),
            as text or, with --log-format json, one JSON object per line.

            Clustering: --cluster nats://HOST:PORT[,nats://HOST:PORT...] (or the
            file's cluster: {nats: [URLs], node: NAME}) joins the brokers that use
            the same NATS servers: values sent on any node reach the subscribers of
            that subject on every node, in each publisher's order; triggers,
            complete, fail and delete reach every node; list sums the cluster's
            subscriber counts. --node names this node (default HOSTNAME-PID). While
            NATS is unreachable the broker keeps serving its own clients, /ready
            answers 503 (not ready: cluster: not connected to NATS) and it
            reconnects by itself.
            """
    )

    @Option(help: "The address to listen on (default: the file's listen.host, or 127.0.0.1).")
    var host: String?

    @Option(help: "The port to listen on; 0 picks a free one and logs it (default: the file's listen.port, or 7420).")
    var port: Int?

    @Option(help: ArgumentHelp("A PEM certificate file: serve wss:// (needs --tls-private-key).", valueName: "path"))
    var tlsCertificate: String?

    @Option(help: ArgumentHelp("The PEM private key of --tls-certificate.", valueName: "path"))
    var tlsPrivateKey: String?

    @Option(help: ArgumentHelp(
        "Event loops serving connections, the hub's included (default: the file's listen.eventLoops, or the cores this process may use).",
        valueName: "n"))
    var eventLoops: Int?

    @Option(name: .customLong("config"), help: ArgumentHelp("A YAML configuration file (see examples/hub.yml).", valueName: "file"))
    var configPath: String?

    @Flag(help: "Validate the --config file, print 'FILE: ok' or the error, and exit without serving.")
    var checkConfig = false

    @Option(help: ArgumentHelp(
        "Join a cluster through these NATS servers (comma-separated nats://HOST:PORT; overrides the file's cluster.nats).",
        valueName: "urls"))
    var cluster: String?

    @Option(help: ArgumentHelp(
        "This node's name in the cluster (letters, digits, _-.; default: the file's cluster.node, or HOSTNAME-PID).",
        valueName: "name"))
    var node: String?

    @Option(help: "The log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    @Option(help: "The log format: text (one line per message) or json (one JSON object per line).")
    var logFormat: LogFormat = .text

    /// How logs are written.
    enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    func validate() throws {
        if let port, !(0...65535).contains(port) {
            throw ValidationError("--port must be between 0 and 65535, got \(port)")
        }
        if let eventLoops, !HubService.Configuration.eventLoopRange.contains(eventLoops) {
            let range = HubService.Configuration.eventLoopRange
            throw ValidationError("--event-loops must be between \(range.lowerBound) and \(range.upperBound), got \(eventLoops)")
        }
        if (tlsCertificate == nil) != (tlsPrivateKey == nil) {
            throw ValidationError("--tls-certificate and --tls-private-key must be given together")
        }
        if let cluster, case .failure(let problem) = ClusterSettings.parseURLList(cluster) {
            throw ValidationError("--cluster: \(problem.message)")
        }
        if let node, let problem = ClusterSettings.problem(withNodeName: node) {
            throw ValidationError("--node: \(problem)")
        }
        if node != nil, cluster == nil, configPath == nil {
            throw ValidationError("--node needs --cluster (or a configuration file with cluster)")
        }
        if checkConfig, configPath == nil {
            throw ValidationError("--check-config needs --config FILE")
        }
    }

    /// The configuration: the file's (or the defaults), with --host and --port applied.
    private func loadConfiguration() throws(ConfigurationError) -> BrokerConfiguration {
        var configuration = try configPath.map { path throws(ConfigurationError) in
            // The file's `storage` section describes a durable store in SQLite.
            try BrokerConfiguration.load(contentsOf: path, storage: SQLiteStorage.self)
        } ?? BrokerConfiguration()
        if let host { configuration.service.host = host }
        if let port { configuration.service.port = port }
        if let eventLoops { configuration.service.eventLoops = eventLoops }
        if let tlsCertificate, let tlsPrivateKey {
            configuration.service.tls = TLSConfiguration(certificatePath: tlsCertificate, privateKeyPath: tlsPrivateKey)
        }
        if let cluster, case .success(let urls) = ClusterSettings.parseURLList(cluster) {
            configuration.cluster = ClusterSettings(
                urls: urls, node: configuration.cluster?.node,
                sendImmediately: configuration.cluster?.sendImmediately ?? false)
        }
        if let node {
            guard configuration.cluster != nil else {
                throw ConfigurationError(
                    file: configuration.file, line: 1, column: 1, path: "cluster",
                    message: "--node \(node) needs --cluster or the file's cluster section")
            }
            configuration.cluster?.node = node
        }
        // Disk faults for the fault-injection tests (scripts/faults): never set in production.
        let faultVariable = SQLiteStore.FaultInjection.environmentVariable
        if let text = ProcessInfo.processInfo.environment[faultVariable], !text.isEmpty,
            var storage = configuration.service.storage as? SQLiteStorage {
            guard let faults = SQLiteStore.FaultInjection(parsing: text) else {
                throw ConfigurationError(
                    file: configuration.file, line: 1, column: 1, path: "storage",
                    message: "\(faultVariable)=\(text): expected cut=N,seed=S,control=PATH")
            }
            storage.faults = faults
            configuration.service.storage = storage
        }
        return configuration
    }

    func run() async throws {
        let level = logLevel
        let format = logFormat
        LoggingSystem.bootstrap { label in
            switch format {
            case .json:
                return JSONLogHandler(label: label, level: level)
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
        let broker: BrokerConfiguration
        do {
            broker = try loadConfiguration()
            if checkConfig {
                try broker.check()
                // --tls-certificate/--tls-private-key files too (the file's are checked when parsed).
                try broker.service.tls?.validate()
                print("\(broker.file): ok")
                return
            }
        } catch {
            Output.message("\(error)")
            throw ExitCode.failure
        }
        let logger = Logger(label: "hubcli.serve")
        if let raised = OpenFileLimit.raiseToHard(), raised.after != raised.before {
            logger.debug("raised the open-file limit", metadata: ["from": "\(raised.before)", "to": "\(raised.after)"])
        }
        if let limit = OpenFileLimit.current, limit.soft < UInt64(broker.service.maxConnections) + 64 {
            logger.warning("the open-file limit is below limits.maxConnections: connections past it are refused", metadata: [
                "openFileLimit": "\(limit.soft)", "maxConnections": "\(broker.service.maxConnections)",
            ])
        }
        // Every signal the broker answers is trapped before it listens: one that came between
        // "listening" and the group's run would otherwise end the process at once (SIGTERM's,
        // SIGHUP's and SIGUSR2's default action), cutting every connection without a close.
        let stopSignals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        let otherSignals = await UnixSignalsSequence(trapping: .sighup, .sigusr2)
        let configuration = broker.service
        let host = configuration.host
        let service: HubService
        let bound: Int
        do {
            service = try HubService(configuration: configuration, logger: logger)
        } catch {
            throw CLIError(Self.cannotStart(error, host: host, port: configuration.port))
        }
        // The cluster node lives on the service's loop; /ready waits for it to reach NATS.
        let membership = ClusterMembership()
        if broker.cluster != nil {
            try await service.addReadinessCheck(named: "cluster") { membership.problem() }
            try await service.addMetricsSource { membership.metrics() }
        }
        do {
            bound = try await service.start { [eventLoop = service.eventLoop] hub in
                if let cluster = broker.cluster {
                    try membership.openStores(cluster, hub: hub, eventLoop: eventLoop, logger: logger)
                }
                try broker.declare(in: hub)
                if let cluster = broker.cluster {
                    try membership.join(cluster, hub: hub, eventLoop: eventLoop, logger: logger)
                }
            }
        } catch let error as ConfigurationError {
            await service.shutdown(grace: .zero)
            Output.message("\(error)")
            throw ExitCode.failure
        } catch {
            await service.shutdown(grace: .zero)
            throw CLIError(Self.cannotStart(error, host: host, port: configuration.port))
        }
        let scheme = configuration.tls == nil ? "ws" : "wss"
        Output.message("hubcli: listening on \(scheme)://\(host):\(bound)/")
        if let cluster = broker.cluster {
            Output.message("hubcli: cluster node \(membership.nodeName ?? "?") via \(cluster.urls.joined(separator: ","))")
        }
        defer { membership.leave(service.eventLoop) }
        releaseStartupPages(logger: logger)
        // The service returns from run() by itself after a drain: that ends the group.
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)], logger: logger))
        // SIGINT/SIGTERM start the group's graceful shutdown (one that comes before the group
        // runs is kept for it): the service ends every live subscription with shutting_down,
        // closes with 1001, and run() returns.
        let stopping = Task {
            for await _ in stopSignals { await group.triggerGracefulShutdown() }
        }
        defer { stopping.cancel() }
        // SIGHUP reloads the file; SIGUSR2 drains (run() returns when the drain is done).
        let signals = Task {
            for await signal in otherSignals {
                if signal == .sigusr2 {
                    Task { await service.drain(requestedBy: "SIGUSR2") }
                } else {
                    await reload(service, logger: logger)
                }
            }
        }
        defer { signals.cancel() }
        try await group.run()
    }

    /// Re-reads the configuration file (SIGHUP) and applies it; a file with a mistake is
    /// logged (with its line and column) and the running configuration kept.
    private func reload(_ service: HubService, logger: Logger) async {
        guard configPath != nil else {
            logger.notice("SIGHUP: no --config file to reload")
            return
        }
        do {
            let broker = try loadConfiguration()
            try await service.reload(broker)
            releaseStartupPages(logger: logger)
        } catch {
            logger.error("reload failed, keeping the running configuration", metadata: ["error": "\(error)"])
        }
    }
}

extension Serve {
    /// Lets go of the executable's pages that starting (or reloading) touched and serving
    /// does not use: see `StartupPages`. Serving maps again the ones it runs.
    private func releaseStartupPages(logger: Logger) {
        #if canImport(Glibc)
        let bytes = StartupPages.release()
        logger.debug("released the pages starting touched", metadata: ["advisedBytes": "\(bytes)"])
        #endif
    }

    /// `cannot start the broker: cannot listen on HOST:PORT: address already in use`, or the error as it is.
    static func cannotStart(_ error: any Error, host: String, port: Int) -> String {
        if let transport = error as? TransportError, transport.code == .listenFailed {
            return "cannot start the broker: \(transport.message)"
        }
        return "cannot start the broker on \(host):\(port): \(error)"
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
