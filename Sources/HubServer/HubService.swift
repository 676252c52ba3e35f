import Foundation
import HubEngine
import HubRegistry
import HubSQLite
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
    /// Where the service listens and how it behaves.
    public struct Configuration: Sendable {
        /// The address to listen on.
        public var host: String
        /// The port to listen on; 0 picks a free one.
        public var port: Int
        /// The hub's behaviour (auto-creation, buffers, pipeline limits).
        public var hub: Hub.Configuration
        /// The sessions' behaviour (limits, auth).
        public var session: SessionConfiguration
        /// The largest inbound message; larger ones close the connection with 1009.
        public var maxMessageSize: Int
        /// The most simultaneous authenticated connections (every connection, on a server
        /// without auth); more are closed with 4429. Connections still waiting to
        /// authenticate are not counted: see ``maxUnauthenticated``.
        public var maxConnections: Int
        /// The most connections waiting to authenticate at once: beyond it, a newcomer
        /// displaces the one that has waited longest (closed with 4401).
        public var maxUnauthenticated: Int = 1000
        /// Seconds between keepalive pings of an idle connection (0: none).
        public var pingInterval: UInt16
        /// Seconds without an answer to pings before a connection is dropped.
        public var idleTimeout: UInt16
        /// Seconds a new connection may take to send its upgrade request before it is
        /// dropped (sockets that never send one would hold a descriptor meanwhile).
        public var handshakeTimeout: UInt16 = 5
        /// The most accepted sockets waiting to send their upgrade or HTTP request: a
        /// newcomer beyond it closes the one that has waited longest (sockets that
        /// connect and send nothing could otherwise hold every descriptor).
        public var maxPendingHandshakes: Int = 1000
        /// The certificate and private key to serve `wss://` with; `nil` serves `ws://`.
        public var tls: TLSConfiguration?
        /// How long a lame-duck drain (SIGUSR2, `hubcli drain`) takes to close every
        /// connection (spread over it) when the request names no grace period.
        public var drainGrace: Duration = .seconds(30)
        /// How often `$sys.stats` and `$sys.connections` are published.
        public var statsInterval: Duration = .seconds(1)
        /// A separate plain-HTTP (and WebSocket) listener for operators: `/metrics`, the
        /// dashboard and its connection; `nil` serves them on the main port. With one, the
        /// main port keeps only WebSocket, `/health` and `/ready`.
        public var admin: AdminListener?
        /// Where durable subjects are stored (configuration `storage`); `nil`: no subject
        /// may be durable.
        public var storage: Storage?
        /// The event loops that serve connections (configuration `listen.eventLoops`; at
        /// least 1). The first is the hub's loop: every subject, pipeline and session
        /// lives there, and it listens and serves connections too. It hands the sockets it
        /// accepts to the loops in turn, itself first; each other loop does its
        /// connections' socket work (reads, WebSocket framing, TLS, writes), and their
        /// sessions' messages cross to and from the hub's loop in one batch per loop and
        /// pass. 1 (the default here; `hubcli serve` defaults to the cores it may use)
        /// serves everything on the hub's loop.
        public var eventLoops: Int = 1

        /// The event loops a service may run (``eventLoops``).
        public static let eventLoopRange = 1...256

        /// The longest a heavy fan-out's writes wait to be batched (configuration
        /// `listen.maxWriteDelay`). Every loop holds its writes while messages stream in,
        /// 500 µs at first; while each connection waiting to be written gets at least
        /// two messages per 500 µs, the hold doubles, up to this, and shrinks again when
        /// the stream slows (``EventLoop/Configuration/writeCoalescingStreamingDelay``).
        /// Longer holds cost the broker, and a subscriber busy keeping up, fewer writes
        /// and reads per message, for a few milliseconds of latency under such a load. A
        /// value at or below 500 µs keeps the hold at 500 µs.
        public var maximumWriteDelay: Duration = .milliseconds(3)

        /// Whether the event loops measure the CPU time of each service pass, for
        /// `/metrics` (`hub_event_loop_pass_cpu_max_seconds`): a system call per pass,
        /// so off by default.
        public var measuresPassCPUTime = false

        /// The values ``maximumWriteDelay`` may take.
        public static let maximumWriteDelayRange: ClosedRange<Duration> = .zero ... .seconds(1)

        /// The configuration of the event loop called `name`.
        func eventLoopConfiguration(name: String) -> EventLoop.Configuration {
            var loop = EventLoop.Configuration(name: name, writeCoalescingStreamingDelay: maximumWriteDelay)
            loop.measuresPassCPUTime = measuresPassCPUTime
            return loop
        }

        /// The cores the calling thread may run on (its CPU affinity, as `taskset` sets it
        /// for a process): the event loops `hubcli serve` runs by default.
        /// `ProcessInfo.activeProcessorCount` counts every online core, affinity or not,
        /// and Swift's Glibc module does not export `sched_getaffinity`: the mask is read
        /// from `/proc/thread-self/status` (`Cpus_allowed:`, hexadecimal words).
        public static var availableCores: Int {
            let cores = (try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8))
                .flatMap(allowedCores(inStatus:)) ?? ProcessInfo.processInfo.activeProcessorCount
            return min(eventLoopRange.upperBound, max(1, cores))
        }

        /// The cores of the `Cpus_allowed:` mask in a `/proc/…/status` text; `nil` without one.
        static func allowedCores(inStatus status: String) -> Int? {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed:") }) else {
                return nil
            }
            var cores = 0
            for word in line.dropFirst("Cpus_allowed:".count).split(separator: ",") {
                guard let bits = UInt64(word.trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
                cores += bits.nonzeroBitCount
            }
            return cores
        }

        /// The durable store: an SQLite database (WAL) in a directory.
        public struct Storage: Sendable, Hashable {
            /// The directory of the database (created if missing).
            public var path: String
            /// When a durable value counts as stored (its `ack`): see ``SQLiteStore/Sync``.
            public var sync: SQLiteStore.Sync
            /// Whether other processes may open the database while the broker runs: see
            /// ``SQLiteStore/init(directory:sync:executor:clock:maxPendingBytes:checkpoint:commitOnLoop:loopCommitBudget:shared:onCorruption:faults:)``.
            public var shared: Bool
            /// What the broker does when the checks at start find the database damaged:
            /// refuse to start (the default), or set the damaged subjects' history aside.
            public var onCorruption: SQLiteStore.CorruptionPolicy
            /// Disk faults to inject, for tests (`hubcli serve` reads them from
            /// ``SQLiteStore/FaultInjection/environmentVariable``); `nil` in production.
            public var faults: SQLiteStore.FaultInjection?

            /// Storage in `path` with the sync policy `sync` (default: fsync at each group
            /// commit), kept to the broker unless `shared`, refusing a damaged database
            /// unless `onCorruption` says otherwise.
            public init(
                path: String, sync: SQLiteStore.Sync = .full, shared: Bool = false,
                onCorruption: SQLiteStore.CorruptionPolicy = .refuse, faults: SQLiteStore.FaultInjection? = nil
            ) {
                self.path = path
                self.sync = sync
                self.shared = shared
                self.onCorruption = onCorruption
                self.faults = faults
            }
        }

        /// Where the admin listener listens.
        public struct AdminListener: Sendable, Hashable {
            /// The address (keep it private: it serves plain HTTP).
            public var host: String
            /// The port; 0 picks a free one (``HubService/adminPort``).
            public var port: Int

            /// A listener on `host:port`.
            public init(host: String = "127.0.0.1", port: Int) {
                self.host = host
                self.port = port
            }
        }

        /// The embedded defaults: 127.0.0.1:7420, 1 MiB messages, 10,000 connections, no TLS.
        public init(
            host: String = "127.0.0.1", port: Int = 7420,
            hub: Hub.Configuration = Hub.Configuration(), session: SessionConfiguration = SessionConfiguration(),
            maxMessageSize: Int = 1 << 20, maxConnections: Int = 10_000,
            pingInterval: UInt16 = 30, idleTimeout: UInt16 = 60, tls: TLSConfiguration? = nil
        ) {
            self.tls = tls
            self.host = host
            self.port = port
            self.hub = hub
            self.session = session
            self.maxMessageSize = maxMessageSize
            self.maxConnections = maxConnections
            self.pingInterval = pingInterval
            self.idleTimeout = idleTimeout
        }
    }

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
            try ConnectionLoopServer.start(on: loop, configuration: configuration, hubSide: hubSide, lag: lag)
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

    /// A snapshot of the service's connections, sessions and encoding cache.
    public struct Statistics: Sendable, Equatable {
        /// Open connections (counted against ``Configuration/maxConnections``).
        public var connections: Int
        /// Sessions whose connection has not closed yet.
        public var sessions: Int
        /// Live subscriptions over every session.
        public var subscriptions: Int
        /// Bytes queued for the open connections and not yet handed to their sockets.
        public var queuedBytes: Int
        /// Values whose JSON came from the shared encoding cache (a fanned-out value).
        public var encodingCacheHits: Int
        /// Values encoded for the shared encoding cache.
        public var encodingCacheMisses: Int
        /// `lws_write` calls on the service's connections since it started (closed ones
        /// included): fewer than ``messagesWritten`` when small messages share a write.
        public var writeCalls: Int
        /// Messages completely handed to the sockets since the service started.
        public var messagesWritten: Int
        /// Bytes the connections' buffers and pipelines hold now, as their budgets count
        /// them (``ResourceBudget``).
        public var heldBytes: Int = 0
        /// Timers the connections' pipelines run now.
        public var liveTimers: Int = 0
        /// Open sessions on each event loop, the hub's first (``Configuration/eventLoops``).
        public var loopSessions: [Int] = []
    }

    /// The current ``Statistics`` (all zero once the loop has stopped).
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

/// The loop-confined part of a ``HubService``: the hub, the server and the sessions.
final class ServiceCore: WebSocketServerDelegate, ServiceControl {
    let hub: Hub
    private(set) var configuration: HubService.Configuration
    let eventLoop: EventLoop
    let logger: Logger
    let encodingCache = ValueEncodingCache()
    /// The loop's session counters (connections, failures) for the metrics.
    let counters = ServiceCounters()
    /// How late the loop runs timers.
    private(set) lazy var lagMonitor = LoopLagMonitor(scheduler: hub.scheduler)
    /// Renders `/metrics`.
    private(set) lazy var exporter = MetricsExporter(labelCapacity: configuration.hub.metricsNameCapacity)
    private var server: WebSocketServer?
    /// The separate admin listener, when configured.
    private var adminServer: WebSocketServer?
    private var handlers: [ObjectIdentifier: any SessionLink] = [:]
    /// The other loops that serve connections, in the order they started.
    private var connectionLoops: [ConnectionLoop] = []
    /// Counts the main port's connections over every loop's server.
    private let connectionTally = ConnectionTally()
    private(set) var port = 0
    private(set) var adminPort = 0
    private var stopped = false
    /// Whether a drain has begun.
    private(set) var isDraining = false
    /// Whether the drain has closed every connection.
    private var drainFinished = false
    private var drainedWaiters: [() -> Void] = []
    /// The system subjects, once started.
    private(set) var system: SystemSubjects?
    /// Conditions `/ready` checks (name, and a reason while not ready).
    var readinessChecks: [(name: String, check: @Sendable () -> String?)] = []
    /// What ``HubService/addMetricsSource(_:)`` added to `/metrics`.
    var metricsSources: [@Sendable () -> [MetricSample]] = []
    /// Called when the last connection has closed after ``stop(grace:whenDrained:)``.
    private var drainWaiters: [() -> Void] = []
    /// Checks the clients' tokens; `nil` when the server requires no authentication.
    private(set) var authenticator: Authenticator?
    /// The JWT verifier of the configuration, once built (``installJWT(_:)``).
    private var jwtVerifier: JWTVerifier?
    /// Bounds the connections, of the service and of each identity.
    let admission: Admission
    /// Forgets idle names created on first use, every `hub.idleNameTimeout`.
    private var idleSweep: (any Cancellable)?
    /// The interval ``idleSweep`` runs at.
    private var idleSweepInterval: Duration?

    init(configuration: HubService.Configuration, eventLoop: EventLoop, logger: Logger) {
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.logger = logger
        let hub = Hub(configuration: configuration.hub, scheduler: EventLoopScheduler(eventLoop: eventLoop), logger: logger)
        self.hub = hub
        let scheduler = hub.scheduler
        admission = Admission(limits: ServiceCore.admissionLimits(configuration), clock: { scheduler.now })
        authenticator = ServiceCore.authenticator(configuration.session, jwt: nil)
    }

    /// A connection's transport limits: the largest message, and writes that stop
    /// waiting for coalescing at a quarter of the slow-consumer bound (64 KiB at most),
    /// so that a hold never brings a client that reads near that bound.
    static func connectionLimits(_ configuration: HubService.Configuration) -> WebSocketConnection.Limits {
        WebSocketConnection.Limits(
            maximumMessageSize: configuration.maxMessageSize,
            promptWriteSize: min(64 << 10, max(1, configuration.session.maxQueuedBytes / 4)))
    }

    /// The admission's bounds in `configuration`.
    static func admissionLimits(_ configuration: HubService.Configuration) -> Admission.Limits {
        Admission.Limits(
            maxConnections: configuration.maxConnections, maxUnauthenticated: configuration.maxUnauthenticated,
            maxConnectionsPerIdentity: configuration.session.maxConnectionsPerIdentity,
            identityBudget: configuration.session.identityBudget)
    }

    /// The authenticator of `session`'s settings, with `jwt` for JWTs.
    static func authenticator(_ session: SessionConfiguration, jwt: JWTVerifier?) -> Authenticator? {
        guard session.requiresAuthentication else { return nil }
        return Authenticator(tokens: session.tokens ?? [], configuration: session.auth ?? AuthConfiguration(), jwt: jwt)
    }

    /// Uses `verifier` for JWTs from now on (built from the configuration's `auth.jwt`).
    func installJWT(_ verifier: JWTVerifier?) {
        jwtVerifier = verifier
        authenticator = ServiceCore.authenticator(configuration.session, jwt: verifier)
    }

    /// How many transport connections may be open: the authenticated ones, those waiting
    /// to authenticate, and slack for those being closed or dropped, so that the admission
    /// (not the transport) decides who stays.
    var transportConnectionLimit: Int {
        let waiting = configuration.session.requiresAuthentication ? configuration.maxUnauthenticated : 0
        let wanted = configuration.maxConnections + waiting + waiting / 4 + 16
        guard let descriptors = Self.descriptorBudget else { return wanted }
        // Never more sockets than descriptors: `accept` failing with EMFILE makes lws
        // retry on every pass (100 % CPU); refusing with 4429
        // after the accept does not.
        return max(1, min(wanted, descriptors - pendingHandshakeLimit))
    }

    /// How many sockets may wait for their handshake: the configured bound, at most a
    /// quarter of the descriptors the process may open.
    var pendingHandshakeLimit: Int {
        guard let descriptors = Self.descriptorBudget else { return configuration.maxPendingHandshakes }
        return max(1, min(configuration.maxPendingHandshakes, descriptors / 4))
    }

    /// The share of ``pendingHandshakeLimit`` of each loop's server on the main port.
    var pendingHandshakesPerLoop: Int { max(1, pendingHandshakeLimit / max(1, configuration.eventLoops)) }

    /// The descriptors sockets may use: the process's soft limit less 64 for everything
    /// else (listeners, the store, logs, the event loop's own); `nil` when unknown.
    static var descriptorBudget: Int? {
        guard let soft = OpenFileLimit.current?.soft, soft < UInt64(Int.max) else { return nil }
        return max(8, Int(soft) - 64)
    }

    /// Opens the durable store of ``HubService/Configuration/storage`` (blocking on the
    /// disk: the broker does not listen yet) and gives it to the hub.
    func openStorage() throws {
        guard let storage = configuration.storage, hub.durableStore == nil else { return }
        let store = try SQLiteStore(
            directory: storage.path, sync: storage.sync, executor: LoopStoreExecutor(eventLoop: eventLoop),
            shared: storage.shared, onCorruption: storage.onCorruption, faults: storage.faults)
        hub.durableStore = store
        for notice in store.integrityNotices {
            logger.warning("durable store check", metadata: ["path": "\(store.path)", "found": "\(notice)"])
        }
        if !store.quarantined.isEmpty {
            logger.error(
                "durable subjects set aside: their history was damaged; they start over under a new epoch",
                metadata: ["subjects": "\(store.quarantined.joined(separator: ", "))"])
        }
        if storage.faults != nil { logger.warning("durable store: disk faults are injected (tests only)") }
        // Not ready while the disk refuses the store's commits; each look tries the disk again
        // (at most once a second). Checks run on this loop, the store's.
        let unavailable = LoopBound(store, eventLoop: eventLoop)
        readinessChecks.append(("durable store", {
            unavailable.value.probeIfUnavailable()
            return unavailable.value.unavailableReason
        }))
        logger.info(
            "durable store open",
            metadata: ["path": "\(store.path)", "sync": "\(storage.sync.rawValue)", "shared": "\(storage.shared)"])
    }

    /// Closes the durable store once nothing appends any more.
    func closeStorage() {
        hub.durableStore?.close()
    }

    /// Open connections on every loop, the admin listener's included.
    var openConnections: Int { connectionTally.count + (adminServer?.openConnectionCount ?? 0) }

    /// Open sessions on each loop, the hub's first (whatever the connection loops do not
    /// serve, the admin listener's included).
    var loopSessions: [Int] {
        let relayed = connectionLoops.map(\.sessionCount)
        return [handlers.count - relayed.reduce(0, +)] + relayed
    }

    /// Write counters of connections that have closed.
    private var closedWriteCalls = 0
    private var closedMessagesWritten = 0

    var statistics: HubService.Statistics {
        let sessions = handlers.values.compactMap(\.session)
        var writeCalls = closedWriteCalls
        var messagesWritten = closedMessagesWritten
        for handler in handlers.values {
            writeCalls += handler.writeCalls
            messagesWritten += handler.messagesWritten
        }
        return HubService.Statistics(
            connections: openConnections,
            sessions: sessions.count,
            subscriptions: sessions.reduce(0) { $0 + $1.subscriptionCount },
            queuedBytes: handlers.values.reduce(0) { $0 + $1.queuedBytes },
            encodingCacheHits: encodingCache.hits,
            encodingCacheMisses: encodingCache.misses,
            writeCalls: writeCalls, messagesWritten: messagesWritten,
            heldBytes: sessions.reduce(0) { $0 + $1.budget.heldBytes },
            liveTimers: sessions.reduce(0) { $0 + $1.budget.liveTimers },
            loopSessions: loopSessions)
    }

    /// The main port's server configuration, on `port`: the hub loop's, or (not
    /// `listening`) a connection loop's, which serves the sockets the hub's loop hands it.
    func serverConfiguration(port: Int, listening: Bool = true) -> WebSocketServer.Configuration {
        var server = WebSocketServer.Configuration(
            host: configuration.host, port: port, subprotocol: HubProtocol.subprotocol,
            limits: ServiceCore.connectionLimits(configuration),
            maximumConnections: transportConnectionLimit,
            connectionLimitCloseCode: WebSocketCloseCode(HubCloseCode.tooManyConnections.rawValue),
            pingInterval: configuration.pingInterval, idleTimeout: configuration.idleTimeout,
            tls: configuration.tls, handshakeTimeout: configuration.handshakeTimeout,
            maximumPendingHandshakes: pendingHandshakesPerLoop)
        server.listens = listening
        server.connectionTally = connectionTally
        return server
    }

    /// The hub's side of connection loop `loop`, made on first use; `nil` once stopped.
    func connectionLoop(for loop: EventLoop) -> ConnectionLoop? {
        guard !stopped else { return nil }
        if let known = connectionLoops.first(where: { $0.eventLoop === loop }) { return known }
        let made = ConnectionLoop(eventLoop: loop, core: self)
        connectionLoops.append(made)
        return made
    }

    /// The port the main server listens on, once ``start()`` has started it.
    var startedPort: Int? { server?.port }

    func start() throws -> Int {
        if let server { return server.port }
        let server = WebSocketServer(
            eventLoop: eventLoop, configuration: serverConfiguration(port: configuration.port), delegate: self)
        if configuration.eventLoops > 1 {
            server.socketDistributor = { [unowned self] in self.takerOfNextSocket() }
        }
        try server.start()
        self.server = server
        port = server.port
        lagMonitor.start()
        scheduleIdleSweep()
        let system = try SystemSubjects(hub: hub, interval: configuration.statsInterval)
        self.system = system
        counters.eventSink = { [unowned system] type, fields in system.event(type, fields) }
        hub.onNamedPipelineFailure = { [weak counters] pipeline, sender, error in
            counters?.emit("named_pipeline_failure", [
                "pipeline": .string(pipeline), "sender": sender.map(Value.string) ?? .null, "error": .string(error.message),
            ])
        }
        system.start(
            collect: { [unowned self] in (self.snapshot(for: .stats), self.isDraining) },
            connections: { [unowned self] in self.connectionFigures })
        if let admin = configuration.admin {
            let adminServer = WebSocketServer(
                eventLoop: eventLoop,
                configuration: .init(
                    host: admin.host, port: admin.port, subprotocol: HubProtocol.subprotocol,
                    limits: ServiceCore.connectionLimits(configuration),
                    maximumConnections: transportConnectionLimit,
                    connectionLimitCloseCode: WebSocketCloseCode(HubCloseCode.tooManyConnections.rawValue),
                    pingInterval: configuration.pingInterval, idleTimeout: configuration.idleTimeout,
                    handshakeTimeout: configuration.handshakeTimeout,
                    maximumPendingHandshakes: pendingHandshakeLimit),
                delegate: self)
            try adminServer.start()
            self.adminServer = adminServer
            adminPort = adminServer.port
            logger.info("admin listening", metadata: ["url": "http://\(admin.host):\(adminServer.port)/"])
        }
        let scheme = configuration.tls == nil ? "ws" : "wss"
        logger.info("listening", metadata: ["url": "\(scheme)://\(configuration.host):\(server.port)/"])
        return server.port
    }

    /// The loop's figures now: cumulative counters and current gauges (the lag since
    /// `consumer` last asked).
    func snapshot(for consumer: LoopLagMonitor.Consumer) -> MetricsSnapshot {
        var snapshot = MetricsSnapshot()
        snapshot.connections = openConnections
        snapshot.connectionsOpened = counters.connectionsOpened
        snapshot.loopSessions = loopSessions
        // One pass over the connections (this runs every second for $sys.stats, with
        // tens of thousands of connections open).
        snapshot.bytesReceived = counters.closedBytesReceived
        snapshot.bytesSent = counters.closedBytesSent
        for handler in handlers.values {
            snapshot.subscriptions += handler.session?.subscriptionCount ?? 0
            snapshot.queuedBytes += handler.queuedBytes
            snapshot.bytesReceived += handler.bytesReceived
            snapshot.bytesSent += handler.bytesSent
        }
        snapshot.slowConsumerCloses = counters.slowConsumerCloses
        snapshot.authFailures = counters.authFailures
        snapshot.protocolErrors = counters.protocolErrors
        snapshot.pipelineFailures = counters.pipelineFailures
        snapshot.rateLimitCloses = counters.rateLimitCloses
        snapshot.connectionRefusals = counters.connectionRefusals
        let metrics = hub.metrics
        snapshot.published = metrics.published
        snapshot.activations = metrics.activations
        snapshot.dropped = metrics.dropped
        snapshot.overflows = metrics.overflows
        snapshot.namedPipelineFailures = metrics.namedPipelineFailures
        for (name, entry) in hub.allEntries where !HubName.isSystem(name) {
            snapshot.namesByKind[entry.kindName, default: 0] += 1
        }
        for counters in metrics.allCounters {
            snapshot.delivered += counters.delivered
            var figures = MetricsSnapshot.NameFigures(
                name: counters.name, kind: counters.kind ?? hub.entry(named: counters.name)?.kindName ?? "shared")
            figures.published = counters.published
            figures.delivered = counters.delivered
            figures.dropped = counters.dropped
            figures.overflows = counters.overflows
            snapshot.names[counters.name] = figures
        }
        if consumer == .metrics {
            snapshot.connectionLoopLagMaximum = connectionLoops.map { $0.lag.take() }
            if let hubLoop = eventLoop.takeLongestPassCPUTime() {
                snapshot.loopPassCPUMaximum = [hubLoop] + connectionLoops.map { $0.eventLoop.takeLongestPassCPUTime() ?? .zero }
            }
        }
        let lag = lagMonitor.takeWindow(for: consumer)
        snapshot.loopLagMaximum = lag.maximum
        snapshot.loopLagSamples = lag.samples
        return snapshot
    }

    /// Whether an operator's HTTP request may read `/metrics` or use admin endpoints: on a
    /// server with auth, its `Authorization: Bearer` token must be accepted.
    func mayAdminister(_ request: HTTPRequest) -> Bool {
        guard let authenticator else { return true }
        guard let token = Session.bearerToken(request.authorization),
              let authentication = try? authenticator.authenticate(token, now: Session.wallSeconds(hub)) else {
            return false
        }
        return authentication.identity.mayAdminister("metrics")
    }

    /// The open connections, for `$sys.connections`.
    var connectionFigures: [SystemSubjects.ConnectionFigures] {
        handlers.values.compactMap { handler in
            guard let session = handler.session, !session.isClosed else { return nil }
            return SystemSubjects.ConnectionFigures(
                session: session.id, peer: handler.peer, client: session.clientName,
                authenticated: session.isAuthenticated, identity: session.identity?.name, since: handler.openedAt,
                subscriptions: session.subscriptionCount, queuedBytes: handler.queuedBytes,
                bytesIn: handler.bytesReceived, bytesOut: handler.bytesSent)
        }
    }

    // MARK: ServiceControl

    var connectionCount: Int { openConnections }

    func refreshSystemSubjects() {
        system?.refresh(listingConnections: true)
    }

    /// Starts a lame-duck drain: upgrades refused, `/ready` 503, and the sessions ended
    /// with 1012 in up to 20 batches spread over `grace`. Once every connection has
    /// closed (or at `grace` plus the sessions' close timeout), the drain is finished:
    /// ``whenDrained(_:)`` callers run (``HubService/run()`` returns and stops the service).
    func drain(grace: Duration?, requestedBy: String) -> Bool {
        guard !stopped, !isDraining, server != nil else { return false }
        isDraining = true
        let grace = grace ?? configuration.drainGrace
        server?.stopAccepting()
        adminServer?.stopAccepting()
        for loop in connectionLoops { loop.onServer { $0.stopAccepting() } }
        let live = handlers.values.filter { $0.session.map { !$0.isClosed } ?? false }
        logger.notice(
            "draining", metadata: ["grace": "\(grace)", "connections": "\(live.count)", "requested_by": "\(requestedBy)"])
        counters.emit("drain", ["connections": .int(Int64(live.count)), "requestedBy": .string(requestedBy)])
        let batches = max(1, min(live.count, 20))
        let step = grace / batches
        let scheduler = hub.scheduler
        for batch in 0..<batches {
            let members = stride(from: batch, to: live.count, by: batches).map { live[$0] }
            let close = { for handler in members { handler.session?.drain() } }
            if batch == 0 {
                close()
            } else {
                _ = scheduler.schedule(after: scheduler.now.advanced(by: step * batch), close)
            }
        }
        if handlers.isEmpty {
            finishDrain()
        } else {
            let deadline = scheduler.now.advanced(by: grace + configuration.session.closeTimeout)
            _ = scheduler.schedule(after: deadline) { [weak self] in self?.finishDrain() }
        }
        return true
    }

    /// Applies `broker` (checked already): see ``HubService/reload(_:)``.
    func reload(_ broker: BrokerConfiguration) throws {
        // Every pipeline name must be free or a pipeline in the running hub.
        for pipeline in broker.pipelines {
            if let entry = hub.entry(named: pipeline.name), case .pipeline = entry {} else if let entry = hub.entry(named: pipeline.name) {
                throw ConfigurationError(
                    file: broker.file, at: pipeline.location, path: "pipelines.\(pipeline.name)",
                    message: "'\(pipeline.name)' is a \(entry.kindName) in the running broker")
            }
        }
        for subject in broker.subjects {
            if let entry = hub.entry(named: subject.name), case .subject = entry {} else if let entry = hub.entry(named: subject.name) {
                throw ConfigurationError(
                    file: broker.file, at: subject.location, path: "subjects.\(subject.name)",
                    message: "'\(subject.name)' is a \(entry.kindName) in the running broker")
            }
        }
        var restartNeeded: [String] = []
        let new = broker.service
        if new.host != configuration.host || new.port != configuration.port { restartNeeded.append("listen") }
        if new.tls != configuration.tls { restartNeeded.append("listen.tls") }
        if new.admin != configuration.admin { restartNeeded.append("admin") }
        if new.eventLoops != configuration.eventLoops { restartNeeded.append("listen.eventLoops") }
        if new.maximumWriteDelay != configuration.maximumWriteDelay { restartNeeded.append("listen.maxWriteDelay") }
        if !restartNeeded.isEmpty {
            logger.warning("reload: these settings need a restart", metadata: ["keys": "\(restartNeeded.joined(separator: ", "))"])
        }
        configuration.session = new.session
        configuration.hub = new.hub
        configuration.maxConnections = new.maxConnections
        configuration.maxUnauthenticated = new.maxUnauthenticated
        configuration.maxPendingHandshakes = new.maxPendingHandshakes
        admission.limits = ServiceCore.admissionLimits(configuration)
        authenticator = ServiceCore.authenticator(configuration.session, jwt: jwtVerifier)
        configuration.maxMessageSize = new.maxMessageSize
        configuration.drainGrace = new.drainGrace
        hub.reconfigure(new.hub)
        if server != nil, !stopped { scheduleIdleSweep() }
        let (connectionLimit, handshakeLimit, perLoop) = (transportConnectionLimit, pendingHandshakeLimit, pendingHandshakesPerLoop)
        let limits = ServiceCore.connectionLimits(configuration)
        let update = { (server: WebSocketServer, handshakes: Int) in
            server.updateLimits(
                maximumConnections: connectionLimit, limits: limits,
                maximumPendingHandshakes: handshakes)
        }
        if let server { update(server, perLoop) }
        if let adminServer { update(adminServer, handshakeLimit) }
        for loop in connectionLoops {
            loop.promptWriteSize = limits.promptWriteSize
            loop.onServer { update($0, perLoop) }
        }
        var added = 0, replaced = 0, removed = 0, kept: [String] = []
        for subject in broker.subjects {
            if case .subject(let existing)? = hub.entry(named: subject.name) {
                let initial = subject.kind == .currentValue ? (subject.initial ?? .null) : nil
                if existing.kind != subject.kind || existing.initialValue != initial
                    || (subject.buffer.map { $0 != existing.bufferSize } ?? false)
                    || (subject.overflow.map { $0 != existing.overflow } ?? false)
                    || existing.schema != subject.schema || existing.table?.limits != subject.table {
                    kept.append(subject.name)
                }
                continue
            }
            _ = try? broker.declare(subject, in: hub)
            added += 1
        }
        for trigger in broker.triggers where hub.entry(named: trigger.name) == nil {
            _ = try? hub.declareTrigger(trigger.name)
            added += 1
        }
        let wanted = Set(broker.pipelines.map(\.name))
        for (name, entry) in hub.allEntries {
            if case .pipeline = entry, !wanted.contains(name) {
                hub.removePipeline(named: name)
                removed += 1
            }
        }
        for pipeline in broker.pipelines {
            if case .pipeline(let existing)? = hub.entry(named: pipeline.name) {
                if existing.source == pipeline.source, existing.isShared == pipeline.shared,
                    existing.bufferSize == pipeline.buffer, existing.overflow == pipeline.overflow,
                    existing.keepsCurrentValue == (pipeline.shared && pipeline.currentValue),
                    existing.failurePolicy == pipeline.onError, existing.runs == pipeline.runs,
                    existing.checkpoint == (pipeline.runs ? pipeline.checkpoint : nil) {
                    continue
                }
                hub.removePipeline(named: pipeline.name)
                replaced += 1
            } else {
                added += 1
            }
            do {
                try broker.declare(pipeline, in: hub)
            } catch {
                throw broker.pipelineError(error, pipeline)
            }
        }
        // New and replaced pipelines that run start now (the removed ones were stopped).
        do {
            try hub.startRunningPipelines()
        } catch {
            logger.error("reload: a running pipeline did not start", metadata: ["error": "\(error.message)"])
        }
        if !kept.isEmpty {
            logger.notice(
                "reload: subjects keep their old settings until deleted", metadata: ["subjects": "\(kept.joined(separator: ", "))"])
        }
        logger.notice(
            "configuration reloaded",
            metadata: ["file": "\(broker.file)", "added": "\(added)", "replaced": "\(replaced)", "removed": "\(removed)"])
        counters.emit("reload", [
            "file": .string(broker.file), "added": .int(Int64(added)), "replaced": .int(Int64(replaced)),
            "removed": .int(Int64(removed)),
        ])
    }

    /// Runs `action` once the drain has finished (at once if it has).
    func whenDrained(_ action: @escaping () -> Void) {
        if drainFinished { action() } else { drainedWaiters.append(action) }
    }

    private func finishDrain() {
        guard isDraining, !drainFinished else { return }
        drainFinished = true
        logger.notice("drained", metadata: ["connections": "\(handlers.count)"])
        let waiters = drainedWaiters
        drainedWaiters = []
        for waiter in waiters { waiter() }
    }

    /// Why `/ready` answers 503, or `nil` when the service is serving.
    var notReadyReason: String? {
        guard server != nil else { return "starting" }
        if stopped { return "shutting down" }
        if isDraining { return "draining" }
        for (name, check) in readinessChecks {
            if let reason = check() { return "\(name): \(reason)" }
        }
        return nil
    }

    func server(_ server: WebSocketServer, didReceive exchange: HTTPExchange) {
        serve(exchange.request, on: server === adminServer ? .admin : .main, respond: exchange.respond)
    }

    /// Answers a plain HTTP request that arrived on `listener` (on any loop).
    func serve(_ request: HTTPRequest, on listener: ServiceRoutes.Listener, respond: (HTTPResponse) -> Void) {
        ServiceRoutes.handle(request, on: listener, adminSplit: adminServer != nil, core: self, respond: respond)
    }

    /// (Re)starts the sweep of idle names at the hub's `idleNameTimeout` (none when it is
    /// `nil`); a reload that keeps the interval keeps the running sweep.
    private func scheduleIdleSweep() {
        let interval = hub.configuration.idleNameTimeout
        guard idleSweep == nil || interval != idleSweepInterval else { return }
        idleSweep.take()?.cancel()
        idleSweepInterval = interval
        guard let interval else { return }
        let scheduler = hub.scheduler
        idleSweep = scheduler.schedule(after: scheduler.now.advanced(by: interval), interval: interval) { [weak self] in
            guard let self else { return }
            let forgotten = self.hub.sweepIdleNames()
            if forgotten > 0 { self.logger.info("forgot idle names", metadata: ["count": "\(forgotten)"]) }
        }
    }

    /// Ends every session (their subscriptions' `shutting_down` go out before the close
    /// frames) and closes the listener; `whenDrained` runs once the last connection has
    /// closed, or `grace` from now if some are still open then.
    func stop(grace: Duration, whenDrained: @escaping () -> Void) {
        if !stopped {
            stopped = true
            lagMonitor.stop()
            idleSweep.take()?.cancel()
            system?.stop()
            counters.eventSink = nil
            hub.onNamedPipelineFailure = nil
            let live = handlers.values
            for handler in live { handler.session?.shutDown() }
            hub.stopRunningPipelines()
            let goingAway = WebSocketCloseCode(HubCloseCode.goingAway.rawValue)
            server?.close(code: goingAway, reason: "server shutting down", discardingQueued: false)
            adminServer?.close(code: goingAway, reason: "server shutting down", discardingQueued: false)
            for loop in connectionLoops {
                loop.onServer { $0.close(code: goingAway, reason: "server shutting down", discardingQueued: false) }
            }
            logger.info("stopped")
        }
        drainWaiters.append(whenDrained)
        if handlers.isEmpty {
            drained()
        } else {
            _ = hub.scheduler.schedule(after: hub.scheduler.now.advanced(by: grace)) { [weak self] in self?.drained() }
        }
    }

    private func drained() {
        let waiters = drainWaiters
        drainWaiters = []
        for waiter in waiters { waiter() }
    }

    func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
        let handler = SessionHandler(connection: connection, sessions: sessionFactory) { [unowned self] closed in
            self.forget(closed)
        }
        handlers[ObjectIdentifier(handler)] = handler
        connection.handler = handler
    }

    /// Which loop serves the next accepted socket (0: the hub's).
    private var nextLoop = 0

    /// Sends an accepted socket to the next loop in turn, the hub's first (a lone client,
    /// such as one publisher, then has no hop between loops): returns what hands it to
    /// a connection loop, or `nil` when it is the hub's turn (or that loop does not
    /// serve yet), to serve it here.
    private func takerOfNextSocket() -> ((AcceptedSocket) -> Void)? {
        guard !stopped, !connectionLoops.isEmpty else { return nil }
        let chosen = nextLoop
        nextLoop = (nextLoop + 1) % (connectionLoops.count + 1)
        guard chosen > 0 else { return nil }
        return connectionLoops[chosen - 1].socketTaker
    }

    /// Records a connection that opened on a connection loop: returns what makes its
    /// session, or `nil` once the service has stopped.
    func adopt(_ relayed: RelayedSession) -> SessionFactory? {
        guard !stopped else { return nil }
        handlers[ObjectIdentifier(relayed)] = relayed
        return sessionFactory
    }

    /// Makes the session of each new connection.
    private var sessionFactory: SessionFactory {
        SessionFactory(
            hub: hub, configuration: configuration.session, encodingCache: encodingCache, logger: logger,
            counters: counters, service: self, authenticator: authenticator, admission: admission)
    }

    /// Forgets a connection that closed; returns whether it was known.
    @discardableResult
    func forget(_ handler: any SessionLink) -> Bool {
        guard handlers.removeValue(forKey: ObjectIdentifier(handler)) != nil else { return false }
        counters.closedBytesReceived += handler.bytesReceived
        counters.closedBytesSent += handler.bytesSent
        closedWriteCalls += handler.writeCalls
        closedMessagesWritten += handler.messagesWritten
        if stopped, handlers.isEmpty { drained() }
        if isDraining, handlers.isEmpty { finishDrain() }
        return true
    }
}
