import CWebsockets
import Logging

/// A WebSocket server endpoint: one lws vhost listening on `host:port` of an ``EventLoop``.
///
/// Confined to the loop thread: create it, ``start()`` it and use it there. After
/// ``start()`` the loop keeps the server alive until the loop shuts down.
public final class WebSocketServer: WebSocketEndpoint {
    /// The loop the server runs on.
    public let eventLoop: EventLoop
    /// The configuration it was created with (``updateLimits(maximumConnections:limits:)``
    /// changes its limits).
    public private(set) var configuration: Configuration
    /// Receives the connections. Held strongly.
    public let delegate: any WebSocketServerDelegate
    /// The bound port (the real one when ``Configuration/port`` was 0); 0 before start.
    public private(set) var port = 0
    /// Whether ``close(code:reason:discardingQueued:)`` was called: new connections are refused.
    public private(set) var isClosed = false
    /// Connections open and counted against the maximum.
    public private(set) var openConnectionCount = 0

    /// Whether new WebSocket upgrades are refused (``stopAccepting()``) while open
    /// connections and plain HTTP requests are still served.
    public private(set) var isRefusingUpgrades = false

    private let logger: Logger
    private var vhost: OpaquePointer?
    private var connections: [ObjectIdentifier: WebSocketConnection] = [:]
    /// The plain HTTP requests in progress, by connection.
    private var exchanges: [OpaquePointer: HTTPExchange] = [:]
    /// The timer of ``watchForHangUps()`` while it runs.
    private var hangUpCheck: TimerQueue.Entry?
    /// Accepted sockets that have not sent their upgrade or HTTP request yet, oldest first.
    private var pendingHandshakes = PendingHandshakes()
    /// Sockets displaced from ``pendingHandshakes``, closed by ``closeDisplaced()``.
    private var displaced: Set<OpaquePointer> = []
    private var displacedClose: TimerQueue.Entry?
    /// The once-a-second timer of ``sweepKeepalives()``.
    private var keepaliveSweep: TimerQueue.Entry?

    /// Creates a server on `eventLoop` (loop thread only). Call ``start()`` to listen.
    ///
    /// - Parameter logger: where the server and its connections log; by default the
    ///   loop's logger.
    public init(
        eventLoop: EventLoop, configuration: Configuration = .init(), delegate: any WebSocketServerDelegate,
        logger: Logger? = nil
    ) {
        eventLoop.preconditionInEventLoop()
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.delegate = delegate
        self.logger = logger ?? eventLoop.logger
    }

    /// Connections known to the server, open or still in their handshake (for tests).
    var trackedConnectionCount: Int { connections.count }

    /// The open connections.
    public var openConnections: [WebSocketConnection] {
        connections.values.filter { $0.isCounted }
    }

    /// Starts listening.
    ///
    /// - Throws: ``TransportError`` `invalid_argument` for a bad port,
    ///   `tls_configuration_failed` naming a TLS file that cannot be read, `listen_failed`
    ///   when lws cannot create the listening vhost (naming the reason when a bind of the
    ///   address tells it, such as `address already in use`), or cannot load the TLS files.
    public func start() throws {
        eventLoop.preconditionInEventLoop()
        guard vhost == nil else { return }
        guard !eventLoop.isDestroying else {
            throw TransportError(code: .eventLoopShutDown, message: "the event loop is shutting down")
        }
        if configuration.listens {
            guard (0...65535).contains(configuration.port) else {
                throw TransportError(code: .invalidArgument, message: "port \(configuration.port) is out of range")
            }
            try eventLoop.ports.checkAvailable(configuration.port)
        } else {
            try eventLoop.ports.checkHandedOverSocketsAvailable()
        }
        if let tls = configuration.tls {
            try tls.validate()
        }
        let arena = eventLoop.arena
        let protocols = WebSocketCallbackDispatcher.protocolTable(
            for: self, on: eventLoop, name: configuration.subprotocol,
            receiveBufferSize: configuration.receiveBufferSize, limits: configuration.limits)

        var info = lws_context_creation_info()
        info.port = configuration.listens ? Int32(configuration.port) : cws_context_port_no_listen_server
        info.iface = UnsafePointer(arena.cString(configuration.host))
        info.vhost_name = UnsafePointer(arena.cString("hub-server-\(ObjectIdentifier(self).hashValue)"))
        info.protocols = UnsafePointer(protocols)
        info.timeout_secs_ah_idle = UInt32(max(1, configuration.handshakeTimeout))
        // lws's keepalive off (a policy without a hang-up time: without any policy lws
        // would use its default, a ping every 300 s): the server keeps its connections
        // alive itself (``sweepKeepalives()``), as lws's validity timers cost a walk over
        // every connection at each ping and pong.
        info.retry_and_idle_policy = UnsafePointer(arena.keepalivePolicy(pingInterval: 0, idleTimeout: 0))
        info.options |= cws_option_fail_upon_unable_to_bind
        if !configuration.host.contains(":") {
            info.options |= cws_option_disable_ipv6
        }
        if let tls = configuration.tls {
            TLSContextSetup.configureServerVhost(&info, tls: tls, arena: arena)
        }
        guard let vhost = lws_create_vhost(eventLoop.lwsContext, &info) else {
            var message = "cannot listen on \(configuration.host):\(configuration.port)"
            if let reason = ListenProbe.reason(host: configuration.host, port: configuration.port) {
                message += ": \(reason)"
            } else if let tls = configuration.tls {
                message += " with TLS (is '\(tls.certificatePath)' a PEM certificate and '\(tls.privateKeyPath)' its PEM private key?)"
            }
            throw TransportError(code: .listenFailed, message: message)
        }
        guard configuration.listens else {
            self.vhost = vhost
            eventLoop.ports.registerHandedOverSockets()
            startKeepalive()
            logger.debug("serving handed-over sockets")
            return
        }
        let bound = Int(lws_get_vhost_listen_port(vhost))
        guard bound > 0 else {
            throw TransportError(
                code: .listenFailed, message: "cannot listen on \(configuration.host):\(configuration.port)")
        }
        self.vhost = vhost
        self.port = bound
        startKeepalive()
        eventLoop.ports.register(bound)
        logger.debug("listening", metadata: ["host": "\(configuration.host)", "port": "\(bound)"])
    }

    private func startKeepalive() {
        guard configuration.pingInterval > 0 else { return }
        keepaliveSweep = eventLoop.scheduleTimer(
            deadline: EventLoop.monotonicNanoseconds() + 1_000_000_000, interval: 1_000_000_000
        ) { [weak self] in
            self?.sweepKeepalives()
        }
    }

    // MARK: - Sockets served on other loops

    /// Chooses where each socket this server accepts is served, before it is: returns
    /// what takes the socket (it then has another server ``adopt(_:)`` it, or closes it),
    /// or `nil` to have this server serve it. Set on the loop thread; `nil` serves every
    /// one here.
    public var socketDistributor: (() -> ((AcceptedSocket) -> Void)?)?

    /// Asks ``socketDistributor`` where the socket lws just accepted goes; nonzero when
    /// another server takes it (lws then closes its own descriptor: the taker has a
    /// duplicate, made only then).
    func distribute(accepted descriptor: Int32) -> Int32 {
        guard let take = socketDistributor?(), let socket = AcceptedSocket(duplicating: descriptor) else { return 0 }
        take(socket)
        return 1
    }

    /// Serves `socket`, which a server on another loop accepted, as if this one had (its
    /// upgrade or HTTP request, TLS when configured); closes it when this server is closed
    /// or lws cannot take it.
    public func adopt(_ socket: AcceptedSocket) {
        eventLoop.preconditionInEventLoop()
        guard let vhost, !isClosed, !eventLoop.isDestroying else {
            socket.close()
            return
        }
        // On failure lws closes the descriptor itself.
        if lws_adopt_socket_vhost(vhost, socket.descriptor) == nil {
            logger.debug("a handed-over socket could not be adopted")
        }
    }

    /// Refuses new connections and closes every open one with `code`, discarding what
    /// they have queued unless `discardingQueued` is false (then the close frame follows
    /// the queued messages). The listening socket stays bound until the loop shuts down.
    public func close(
        code: WebSocketCloseCode = .goingAway, reason: String = "server shutting down", discardingQueued: Bool = true
    ) {
        eventLoop.preconditionInEventLoop()
        isClosed = true
        for connection in connections.values where connection.isCounted {
            connection.close(code: code, reason: reason, discardingQueued: discardingQueued)
        }
    }

    /// Refuses new WebSocket upgrades from now on; open connections and plain HTTP
    /// requests are still served (a draining server's `/ready` says so).
    public func stopAccepting() {
        eventLoop.preconditionInEventLoop()
        isRefusingUpgrades = true
    }

    /// Changes the connection limit, the per-connection limits for the connections
    /// accepted from now on and (when given) the bound on sockets waiting for their
    /// handshake (a reload); open connections keep theirs.
    public func updateLimits(maximumConnections: Int, limits: WebSocketConnection.Limits, maximumPendingHandshakes: Int? = nil) {
        eventLoop.preconditionInEventLoop()
        configuration.maximumConnections = maximumConnections
        configuration.limits = limits
        if let maximumPendingHandshakes { configuration.maximumPendingHandshakes = max(1, maximumPendingHandshakes) }
    }

    /// Plain HTTP requests in progress (for tests).
    var pendingExchangeCount: Int { exchanges.count }

    /// Accepted sockets still waiting for their upgrade or HTTP request.
    public var pendingHandshakeCount: Int { pendingHandshakes.count }

    /// Sockets closed because more were waiting for their handshake than allowed.
    public private(set) var displacedHandshakeCount = 0

    // MARK: - Events from the callback dispatcher

    func accepted(_ wsi: OpaquePointer) -> Bool {
        guard let oldest = pendingHandshakes.add(wsi, limit: configuration.maximumPendingHandshakes) else { return true }
        displacedHandshakeCount += 1
        displaced.insert(oldest)
        // Not from inside lws's callback about another socket, and not with lws's own
        // asynchronous kill either (it waits for the once-a-second timeout check, and the
        // descriptors would pile up meanwhile): from a timer due now, which runs outside
        // lws's callbacks, right after this pass.
        if displacedClose == nil {
            displacedClose = eventLoop.scheduleTimer(deadline: EventLoop.monotonicNanoseconds(), interval: nil) { [weak self] in
                self?.closeDisplaced()
            }
        }
        return true
    }

    func requestArrived(_ wsi: OpaquePointer) {
        pendingHandshakes.remove(wsi)
    }

    func freed(_ wsi: OpaquePointer) {
        pendingHandshakes.remove(wsi)
        displaced.remove(wsi)
    }

    private func closeDisplaced() {
        displacedClose = nil
        while let wsi = displaced.popFirst() {
            cws_kill_sync(wsi)  // its WSI_DESTROY comes through freed(_:)
        }
    }

    func filter(_ wsi: OpaquePointer, slot: UnsafeMutableRawPointer) -> Int32 {
        guard !isClosed, !isRefusingUpgrades else { return 1 }
        // RFC 6455 §4.2.1: version 13 only (lws would also upgrade drafts 7 and 8).
        guard WebSocketCallbackDispatcher.header(wsi, WSI_TOKEN_VERSION) == "13" else {
            _ = lws_return_http_status(wsi, 426, "only Sec-WebSocket-Version: 13 is supported")
            return 1
        }
        let request = WebSocketUpgradeRequest(
            path: WebSocketCallbackDispatcher.header(wsi, WSI_TOKEN_GET_URI) ?? "/",
            authorization: WebSocketCallbackDispatcher.header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION))
        guard delegate.server(self, shouldAccept: request) else { return 1 }
        let connection = WebSocketConnection(
            eventLoop: eventLoop, role: .server, requestPath: request.path,
            authorization: request.authorization, limits: configuration.limits, logger: logger)
        connection.peer = WebSocketCallbackDispatcher.peer(wsi)
        if configuration.pingInterval > 0 {
            connection.keepalive = Keepalive(pingInterval: configuration.pingInterval, idleTimeout: configuration.idleTimeout)
        }
        if lws_hdr_total_length(wsi, WSI_TOKEN_PROTOCOL) > 0 {
            // lws only binds a connection that offered subprotocols to a matching one: ours.
            connection.subprotocol = configuration.subprotocol
        }
        connections[ObjectIdentifier(connection)] = connection
        WebSocketCallbackDispatcher.attach(connection, to: slot)
        return 0
    }

    func established(_ connection: WebSocketConnection, wsi: OpaquePointer) {
        connection.didEstablish(wsi)
        if isClosed {
            connection.isRefused = true
            connection.close(code: .goingAway, reason: "server shutting down")
            return
        }
        let admitted = configuration.connectionTally.map { $0.reserve(limit: configuration.maximumConnections) }
            ?? (openConnectionCount < configuration.maximumConnections)
        if !admitted {
            connection.isRefused = true
            connection.close(code: configuration.connectionLimitCloseCode, reason: "too many connections")
            return
        }
        connection.isCounted = true
        openConnectionCount += 1
        delegate.server(self, didAccept: connection)
        connection.notifyOpen()
    }

    func closed(_ connection: WebSocketConnection) {
        if connection.isCounted {
            connection.isCounted = false
            openConnectionCount -= 1
            configuration.connectionTally?.release()
        }
        connection.handleClosed()
    }

    func destroyed(_ connection: WebSocketConnection) {
        closed(connection)
        connection.handleDestroyed()
        connections[ObjectIdentifier(connection)] = nil
    }

    func http(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_HTTP:
            exchanges.removeValue(forKey: wsi)?.connectionClosed()
            let (request, expectsBody) = HTTPExchange.request(on: wsi, uri: input, length: length)
            let exchange = HTTPExchange(request: request, wsi: wsi, eventLoop: eventLoop, expectsBody: expectsBody)
            exchanges[wsi] = exchange
            watchForHangUps()
            if !expectsBody { delegate.server(self, didReceive: exchange) }
            return 0
        case LWS_CALLBACK_HTTP_BODY:
            // Bodies are not used: what arrives is read and dropped.
            return 0
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            guard let exchange = exchanges[wsi], exchange.isReceivingBody else { return 0 }
            exchange.bodyCompleted()
            delegate.server(self, didReceive: exchange)
            return 0
        case LWS_CALLBACK_HTTP_WRITEABLE:
            guard let exchange = exchanges[wsi] else { return 0 }
            let result = exchange.writable()
            if !exchange.isOpen { exchanges.removeValue(forKey: wsi) }
            return result
        case LWS_CALLBACK_CLOSED_HTTP:
            exchanges.removeValue(forKey: wsi)?.connectionClosed()
            return 0
        default:
            return lws_callback_http_dummy(wsi, reason, nil, input, length)
        }
    }

    /// A second passed for every open connection's keepalive: silent peers are pinged,
    /// and those silent for the idle timeout hung up on (a flag test per connection).
    private func sweepKeepalives() {
        for connection in connections.values where connection.isCounted {
            connection.keepaliveSecondPassed()
        }
    }

    /// On libev, lws learns that the peer of an HTTP connection waiting for its answer
    /// went away only from a `POLLHUP` libev never reports: while exchanges are pending,
    /// their sockets are checked every 100 ms, and a hung-up one is closed.
    private func watchForHangUps() {
        guard eventLoop.eventLibrary == .libev, hangUpCheck == nil else { return }
        let interval: Int64 = 100_000_000
        hangUpCheck = eventLoop.scheduleTimer(
            deadline: EventLoop.monotonicNanoseconds() + interval, interval: interval
        ) { [weak self] in
            self?.closeHungUpExchanges()
        }
    }

    private func closeHungUpExchanges() {
        guard !exchanges.isEmpty else {
            if let hangUpCheck { eventLoop.cancelTimer(hangUpCheck) }
            hangUpCheck = nil
            return
        }
        // On libev timers run after the loop's pass, outside lws's callbacks: the
        // connection can be closed at once.
        for wsi in exchanges.keys where cws_peer_hung_up(wsi) != 0 {
            cws_kill_sync(wsi)
        }
    }

    func httpConnectionDestroyed(_ wsi: OpaquePointer) {
        exchanges.removeValue(forKey: wsi)?.connectionClosed()
    }
}
