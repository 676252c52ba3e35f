import Foundation
import HubEngine
import HubLoop
import HubRegistry
import HubTransport
import HubValue
import HubWire
import Logging
import ServiceLifecycle

/// A running hub broker: an event loop, a WebSocket server speaking protocol
/// v1, and the hub its sessions work on.
///
/// Start it with ``start(setUp:)``, which returns the bound port (ask for
/// port 0 to get an ephemeral one), and stop it with ``shutdown(grace:)``, which
/// ends every live subscription with `shutting_down`, closes every connection
/// with 1001 and returns once they are closed (or at the grace deadline).
/// Everything of the hub runs on the service's event loop; ``withHub(_:)`` runs
/// code there.
///
/// It is a swift-service-lifecycle `Service`: in a `ServiceGroup`, ``run()``
/// serves until the group's graceful shutdown (a signal, or another service
/// ending), then shuts down as above.
public final class HubService: Sendable {
    /// The loop every hub object lives on.
    public let eventLoop: EventLoop
    /// The other loops that serve connections (``Configuration/eventLoops`` − 1).
    public let connectionLoops: [EventLoop]
    /// The configuration the service was made with.
    public let configuration: Configuration
    private let core: LoopBound<ServiceCore>

    /// A service on a new event loop; nothing listens until ``start(setUp:)``.
    /// `logger` is the service's, its loop's and its sessions' (each with its session id).
    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "hub.service")) throws {
        let loop = try EventLoop(configuration: configuration.eventLoopConfiguration(name: "hub-loop"), logger: logger)
        eventLoop = loop
        var connectionLoops: [EventLoop] = []
        do {
            for index in 1..<max(1, configuration.eventLoops) {
                connectionLoops.append(
                    try EventLoop(configuration: configuration.eventLoopConfiguration(name: "hub-loop-\(index)"), logger: logger))
            }
        } catch {
            for started in connectionLoops { started.shutdown() }
            loop.shutdown()
            throw error
        }
        self.connectionLoops = connectionLoops
        self.configuration = configuration
        // Made here, then only used on the loop: the loop's work queue orders
        // every later use after this initialisation.
        core = LoopBound(ServiceCore(configuration: configuration, eventLoop: loop, logger: logger), eventLoop: loop)
    }

    /// Sets up the hub with `setUp` (declare subjects, triggers…), starts the named
    /// pipelines that run without subscribers, and starts listening. Returns the bound port.
    ///
    /// Only the first call starts anything: a later one (``run()`` after this, as a
    /// `ServiceGroup` calls it) returns the bound port and runs neither `setUp` nor a
    /// second server on any loop.
    @discardableResult
    public func start(setUp: @Sendable @escaping (Hub) throws -> Void = { _ in }) async throws -> Int {
        let core = self.core
        // The JWT keys are parsed off the loop, before it needs them.
        let verifier = try JWTVerifier.make(configuration.session.auth?.jwt)
        let port = try await eventLoop.submit {
            if let port = core.value.startedPort { return port }
            try core.value.openStorage()
            try setUp(core.value.hub)
            core.value.installJWT(verifier)
            try core.value.hub.startRunningPipelines()
            return try core.value.start()
        }
        for loop in connectionLoops {
            try await startServing(on: loop, port: port)
        }
        return port
    }

    /// Starts `loop`'s server on the hub's `port`, beside the hub loop's, unless it was
    /// started already: a loop serves the hub's handed-over sockets with one server.
    private func startServing(on loop: EventLoop, port: Int) async throws {
        let core = self.core
        let hubLoop = eventLoop
        let known = try await eventLoop.submit {
            core.value.connectionLoop(for: loop).flatMap { connectionLoop in
                connectionLoop.claimServerStart()
                    ? (LoopBound(connectionLoop, eventLoop: hubLoop), core.value.serverConfiguration(port: port, listening: false), connectionLoop.lag)
                    : nil
            }
        }
        guard let (hubSide, configuration, lag) = known else { return }
        let server = try await loop.submit {
            try ConnectionLoopServer.start(on: loop, configuration: configuration, hubLoop: hubLoop, hubSide: hubSide, lag: lag)
        }
        try await eventLoop.submit { hubSide.value.attach(server) }
    }

    /// The bound port (0 before ``start(setUp:)``).
    public var port: Int {
        get async { (try? await eventLoop.submit { [core] in core.value.port }) ?? 0 }
    }

    /// The admin listener's bound port (0 without one, or before ``start(setUp:)``).
    public var adminPort: Int {
        get async { (try? await eventLoop.submit { [core] in core.value.adminPort }) ?? 0 }
    }

    /// Adds a condition to `/ready`: while `check` returns a reason (for example
    /// "NATS unreachable"), `/ready` answers 503 with it. `check` runs on the loop at
    /// each probe and must be quick.
    public func addReadinessCheck(named name: String, _ check: @Sendable @escaping () -> String?) async throws {
        try await eventLoop.submit { [core] in core.value.readinessChecks.append((name, check)) }
    }

    /// Adds figures to `/metrics`: `source` runs on the loop at each scrape and must be
    /// quick (a cluster node's connection state and drop counts).
    public func addMetricsSource(_ source: @Sendable @escaping () -> [MetricSample]) async throws {
        try await eventLoop.submit { [core] in core.value.metricsSources.append(source) }
    }

    public var statistics: Statistics {
        get async {
            (try? await eventLoop.submit { [core] in core.value.statistics })
                ?? Statistics(
                    connections: 0, sessions: 0, subscriptions: 0, queuedBytes: 0, encodingCacheHits: 0,
                    encodingCacheMisses: 0, writeCalls: 0, messagesWritten: 0)
        }
    }

    /// Runs `body` on the event loop with the hub and returns its result.
    public func withHub<T: Sendable>(_ body: @Sendable @escaping (Hub) throws -> T) async throws -> T {
        try await eventLoop.submit { [core] in try body(core.value.hub) }
    }

    /// Starts a lame-duck drain (the same as SIGUSR2 or `hubcli drain`): new connections
    /// are refused, `/ready` answers 503, and the open connections are closed with 1012
    /// (each live subscription first gets `shutting_down`) spread over `grace` (the
    /// configured ``Configuration/drainGrace`` when `nil`), so that their clients
    /// reconnect elsewhere a few at a time. Returns once every connection has closed (or
    /// the grace period and the close timeout have passed); ``run()`` then returns too.
    public func drain(grace: Duration? = nil, requestedBy: String = "the application") async {
        let core = self.core
        let (drained, whenDrained) = AsyncStream<Never>.makeStream()
        do {
            try await eventLoop.submit {
                _ = core.value.drain(grace: grace, requestedBy: requestedBy)
                core.value.whenDrained { whenDrained.finish() }
            }
            for await _ in drained {}
        } catch {
            // The loop had already stopped.
        }
    }

    /// Applies a re-read configuration file without dropping a connection (what SIGHUP
    /// does in `hubcli serve`): auth, limits and hub settings for what comes from now on;
    /// new subjects and triggers declared; named pipelines added, replaced (live
    /// subscriptions keep the old one) or removed. Subjects and triggers the file no
    /// longer names are kept (a subject's state is the clients'; `delete` removes it);
    /// a subject whose settings changed keeps the old ones until it is deleted. The
    /// listen address, TLS and admin listener need a restart (logged).
    ///
    /// - Throws: the ``ConfigurationError`` of a file that does not check (its line and
    ///   column); nothing is changed then.
    public func reload(_ broker: BrokerConfiguration) async throws {
        try broker.check()
        let core = self.core
        let verifier = try JWTVerifier.make(broker.service.session.auth?.jwt)
        try await eventLoop.submit {
            try core.value.reload(broker)
            core.value.installJWT(verifier)
        }
    }

    /// Returns once a drain (however it was asked for) has closed every connection.
    public func waitForDrain() async {
        await waitUntilDrained()
    }

    /// Returns once a drain (however it was asked for) has closed every connection.
    func waitUntilDrained() async {
        let core = self.core
        let (drained, whenDrained) = AsyncStream<Never>.makeStream()
        do {
            try await eventLoop.submit { core.value.whenDrained { whenDrained.finish() } }
            for await _ in drained {}
        } catch {
            // The loop had already stopped.
        }
    }

    /// Stops the service: every session is ended (each live subscription gets
    /// `shutting_down`, then the connection closes with 1001), the listener is
    /// closed, and the loop stops when the last connection has closed, or at
    /// `grace` if some are still open then. Idempotent.
    public func shutdown(grace: Duration = .seconds(2)) async {
        let core = self.core
        // Resumed by the last connection's close or by the grace timer, whichever
        // comes first (finishing twice is harmless); no polling.
        let (drained, whenDrained) = AsyncStream<Never>.makeStream()
        do {
            try await eventLoop.submit { core.value.stop(grace: grace) { whenDrained.finish() } }
            for await _ in drained {}
            // Every acknowledged durable value is stored; the writer's last group commits.
            try await eventLoop.submit { core.value.closeStorage() }
        } catch {
            // The loop had already stopped.
        }
        for loop in connectionLoops { loop.shutdown() }
        eventLoop.shutdown()
    }
}

extension HubService: Service {
    /// Serves until a graceful shutdown of the task (a `ServiceGroup`'s signal or
    /// another service ending), its cancellation, or the end of a drain (``drain(grace:requestedBy:)``,
    /// SIGUSR2 in `hubcli serve`, a client's `drain`), then shuts down with
    /// ``shutdown(grace:)``. Starts the service first if ``start(setUp:)`` has not.
    public func run() async throws {
        _ = try await start()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await gracefulShutdown() }
            group.addTask { await self.waitUntilDrained() }
            _ = await group.next()
            group.cancelAll()
        }
        await shutdown()
    }
}
