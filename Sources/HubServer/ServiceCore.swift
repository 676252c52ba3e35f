import Foundation
import HubEngine
import HubRegistry
import HubTransport
import HubValue
import HubWire
import Logging

/// The loop-confined part of a ``HubService``: the hub, the server and the sessions.
final class ServiceCore: WebSocketServerDelegate, ServiceControl {
    let hub: Hub
    var configuration: HubService.Configuration
    let eventLoop: EventLoop
    let logger: Logger
    let encodingCache = ValueEncodingCache()
    /// The loop's session counters (connections, failures) for the metrics.
    let counters = ServiceCounters()
    /// How late the loop runs timers.
    private(set) lazy var lagMonitor = LoopLagMonitor(scheduler: hub.scheduler)
    /// Renders `/metrics`.
    private(set) lazy var exporter = MetricsExporter(labelCapacity: configuration.hub.metricsNameCapacity)
    var server: WebSocketServer?
    /// The separate admin listener, when configured.
    var adminServer: WebSocketServer?
    var handlers: [ObjectIdentifier: any SessionLink] = [:]
    /// The other loops that serve connections, in the order they started.
    var connectionLoops: [ConnectionLoop] = []
    /// Counts the main port's connections over every loop's server.
    let connectionTally = ConnectionTally()
    private(set) var port = 0
    private(set) var adminPort = 0
    var stopped = false
    /// Whether a drain has begun.
    var isDraining = false
    /// Whether the drain has closed every connection.
    var drainFinished = false
    var drainedWaiters: [() -> Void] = []
    /// The system subjects, once started.
    private(set) var system: SystemSubjects?
    /// Conditions `/ready` checks (name, and a reason while not ready).
    var readinessChecks: [(name: String, check: @Sendable () -> String?)] = []
    /// What ``HubService/addMetricsSource(_:)`` added to `/metrics`.
    var metricsSources: [@Sendable () -> [MetricSample]] = []
    /// Called when the last connection has closed after ``stop(grace:whenDrained:)``.
    var drainWaiters: [() -> Void] = []
    /// Checks the clients' tokens; `nil` when the server requires no authentication.
    var authenticator: Authenticator?
    /// The JWT verifier of the configuration, once built (``installJWT(_:)``).
    var jwtVerifier: JWTVerifier?
    /// Bounds the connections, of the service and of each identity.
    let admission: Admission
    /// The HTTP API's rate limiters, kept across a client's requests.
    let httpRateLimits = HTTPRateLimits()
    /// Forgets idle names created on first use, every `hub.idleNameTimeout`.
    var idleSweep: (any Cancellable)?
    /// The interval ``idleSweep`` runs at.
    var idleSweepInterval: Duration?

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

    /// Open connections on every loop, the admin listener's included.
    var openConnections: Int { connectionTally.count + (adminServer?.openConnectionCount ?? 0) + streams.count }

    /// The event streams among ``handlers``: connections of their own, which the
    /// transport's tally (WebSocket connections) does not count.
    private var streams = Set<ObjectIdentifier>()

    /// Write counters of connections that have closed.
    var closedWriteCalls = 0
    var closedMessagesWritten = 0

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
        // An HTTP API request carries a message (or, as NDJSON, several): bounded alike.
        server.maximumRequestBodySize = configuration.maxMessageSize
        // The API's own paths get its JSON errors, even from the transport.
        server.refusalAnswer = { status, reason, path in
            guard let path, path.hasPrefix(APIRoute.prefix) else { return nil }
            return APIErrorStatus.transportRefusal(status: status, reason: reason)
        }
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
                    maximumPendingHandshakes: pendingHandshakeLimit,
                    maximumRequestBodySize: configuration.maxMessageSize),
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

    // MARK: ServiceControl

    var connectionCount: Int { openConnections }

    func refreshSystemSubjects() {
        system?.refresh(listingConnections: true)
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
        serve(
            exchange.request, on: server === adminServer ? .admin : .main,
            reply: HTTPReply(respond: exchange.respond, stream: { [eventLoop] in LocalHTTPStream(exchange, on: eventLoop) }))
    }

    /// Answers a plain HTTP request that arrived on `listener` (on any loop) through
    /// `reply`, on the hub's loop, now or later (an API request's answer may wait for the
    /// store; an event stream goes on).
    func serve(_ request: HTTPRequest, on listener: ServiceRoutes.Listener, reply: HTTPReply) {
        ServiceRoutes.handle(request, on: listener, adminSplit: adminServer != nil, core: self, reply: reply)
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
    var sessionFactory: SessionFactory {
        SessionFactory(
            hub: hub, configuration: configuration.session, encodingCache: encodingCache, logger: logger,
            counters: counters, service: self, authenticator: authenticator, admission: admission)
    }

    /// Records an event stream as a connection (drained and stopped with the others);
    /// `false` once the service drains or has stopped.
    func adoptStream(_ stream: any SessionLink) -> Bool {
        guard !stopped, !isDraining else { return false }
        handlers[ObjectIdentifier(stream)] = stream
        streams.insert(ObjectIdentifier(stream))
        return true
    }

    /// Forgets a connection that closed; returns whether it was known.
    @discardableResult
    func forget(_ handler: any SessionLink) -> Bool {
        guard handlers.removeValue(forKey: ObjectIdentifier(handler)) != nil else { return false }
        streams.remove(ObjectIdentifier(handler))
        counters.closedBytesReceived += handler.bytesReceived
        counters.closedBytesSent += handler.bytesSent
        closedWriteCalls += handler.writeCalls
        closedMessagesWritten += handler.messagesWritten
        if stopped, handlers.isEmpty { drained() }
        if isDraining, handlers.isEmpty { finishDrain() }
        return true
    }
}
