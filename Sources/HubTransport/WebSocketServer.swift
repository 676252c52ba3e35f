import CWebsockets
import DequeModule
import Logging

/// A WebSocket and HTTP/1.1 server endpoint: one lws vhost listening on `host:port` of an
/// ``EventLoop`` (or serving sockets another loop's server accepted).
///
/// lws accepts the sockets (and runs TLS) in its raw-skt role; the server speaks HTTP/1.1
/// and RFC 6455 itself on them (``ServerSocket``): plain requests with their bodies go to
/// the delegate as ``HTTPExchange``s, upgrade requests become ``WebSocketConnection``s.
///
/// Confined to the loop thread: create it, ``start()`` it and use it there. After
/// ``start()`` the loop keeps the server alive until the loop shuts down.
public final class WebSocketServer: WebSocketEndpoint {
    /// The loop the server runs on.
    public let eventLoop: EventLoop
    /// The configuration it was created with (``updateLimits(maximumConnections:limits:)``
    /// changes its limits).
    public internal(set) var configuration: Configuration
    /// Receives the connections. Held strongly.
    public let delegate: any WebSocketServerDelegate
    /// The bound port (the real one when ``Configuration/port`` was 0); 0 before start.
    public internal(set) var port = 0
    /// Whether ``close(code:reason:discardingQueued:)`` was called: new connections are refused.
    public internal(set) var isClosed = false
    /// Connections open and counted against the maximum.
    public internal(set) var openConnectionCount = 0

    /// Whether new WebSocket upgrades are refused (``stopAccepting()``) while open
    /// connections and plain HTTP requests are still served.
    public internal(set) var isRefusingUpgrades = false

    let logger: Logger
    var vhost: OpaquePointer?
    /// The name of the vhost's protocol (what adopted sockets are bound to).
    var protocolName: UnsafePointer<CChar>?
    /// Every socket lws has adopted for the server, until it frees it.
    var sockets: [ObjectIdentifier: ServerSocket] = [:]
    /// The WebSocket connections among them.
    var connections: [ObjectIdentifier: WebSocketConnection] = [:]
    /// Sockets that close at their deadline unless the peer closes first.
    var closing: [ObjectIdentifier: ServerSocket] = [:]
    /// Accepted sockets that have not sent a whole request yet (their upgrade, or an HTTP
    /// request and its body; or the next one on a keep-alive connection), oldest first.
    var pendingHandshakes = PendingHandshakes()
    /// Keep-alive sockets between requests: bounded and timed like pending handshakes,
    /// but kept apart from them (they have sent a request already).
    var idleKeepAlive = PendingHandshakes()
    /// Sockets displaced from ``pendingHandshakes``, closed by ``closeDisplaced()``.
    var displaced: Set<OpaquePointer> = []
    var displacedClose: TimerQueue.Entry?
    /// The once-a-second timer of ``sweep()``.
    var sweepTimer: TimerQueue.Entry?
    /// Accepted sockets (here or on another loop) waiting to be taken into lws, oldest
    /// first: at most ``Configuration/adoptionsPerPass`` a pass (``adoptQueued()``).
    var adoptionQueue = Deque<AcceptedSocket>()
    /// Whether ``adoptQueued()`` runs at the end of this pass.
    var adoptionScheduled = false
    /// TLS sockets taken into lws whose handshake is not done (no byte after it yet),
    /// oldest first with the time they stop counting; ``tlsInFlightSet`` holds those
    /// still counted. lws starts a handshake's costly part when the ClientHello
    /// arrives, which for sockets adopted earlier can be many in one pass: at most
    /// ``tlsHandshakesInFlight`` are adopted and not done at once.
    var tlsInFlight = Deque<(wsi: OpaquePointer, until: Int64)>()
    var tlsInFlightSet: Set<OpaquePointer> = []
    var tlsInFlightTimer: TimerQueue.Entry?
    /// How long a TLS socket counts as a handshake in flight at most
    /// (``tlsInFlightNanoseconds``; tests lengthen it to see the bound on a busy host).
    var tlsInFlightHold = WebSocketServer.tlsInFlightNanoseconds
    /// The most TLS handshakes that were in flight at once, and how many times an
    /// adoption waited for one of them (for tests).
    var mostTLSHandshakesInFlight = 0
    var adoptionsThatWaitedForTLS = 0
    /// The most TLS handshakes a server has in flight, and how long one counts at most
    /// (a client that connects and sends nothing holds a place only this long).
    static let tlsHandshakesInFlight = 8
    static let tlsInFlightNanoseconds: Int64 = 100_000_000
    /// Sockets whose close handshake is complete, closed a few a pass, each for at most
    /// 2 ms of wall-clock time a pass: a close costs lws 4.1.6 (Debian's, built with its
    /// debug checks) a walk of its whole descriptor table and of every connection of the loop.
    lazy var closes = EndOfPassQueue(
        eventLoop: eventLoop, perPass: { [weak self] in self?.configuration.closesPerPass ?? 1 },
        timePerPass: 2_000_000, step: { $0.killNow() })  // its WSI_DESTROY comes through socketFreed(_:)
    /// Sockets whose upgrade request is read and waits for its answer, answered a few a
    /// pass, for at most 2 ms a pass.
    lazy var upgrades = EndOfPassQueue(
        eventLoop: eventLoop, perPass: { [weak self] in self?.configuration.upgradesPerPass ?? 1 },
        timePerPass: 2_000_000, step: { $0.upgradeNow() })

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

    /// Connections known to the server, open or closing (for tests).
    var trackedConnectionCount: Int { connections.count }

    /// Sockets lws has adopted for the server and not freed yet (for tests).
    var trackedSocketCount: Int { sockets.count }

    /// The open connections.
    public var openConnections: [WebSocketConnection] {
        connections.values.filter { $0.isCounted }
    }

    /// Starts listening.
    ///
    /// Every socket is served in lws's raw-skt role: lws accepts it (and runs TLS), the
    /// server reads its HTTP requests and WebSocket frames itself (``ServerSocket``).
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
        // Accepted sockets go to the raw-skt role, bound to the server's protocol.
        info.options |= cws_option_adopt_apply_listen_accept_config
        info.listen_accept_role = UnsafePointer(arena.cString("raw-skt"))
        info.listen_accept_protocol = protocols[0].name
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
        protocolName = protocols[0].name
        guard configuration.listens else {
            self.vhost = vhost
            eventLoop.ports.registerHandedOverSockets()
            startSweep()
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
        startSweep()
        eventLoop.ports.register(bound)
        logger.debug("listening", metadata: ["host": "\(configuration.host)", "port": "\(bound)"])
    }

    func startSweep() {
        sweepTimer = eventLoop.scheduleTimer(
            deadline: EventLoop.monotonicNanoseconds() + 1_000_000_000, interval: 1_000_000_000
        ) { [weak self] in
            self?.sweep()
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

    /// Sockets closed because they did not send a whole request within
    /// ``Configuration/handshakeTimeout``.
    public internal(set) var timedOutHandshakeCount = 0

    /// Chooses where each socket this server accepts is served, before it is: returns
    /// what takes the socket (it then has another server ``adopt(_:)`` it, or closes it),
    /// or `nil` to have this server serve it. Set on the loop thread; `nil` serves every
    /// one here.
    public var socketDistributor: (() -> ((AcceptedSocket) -> Void)?)?

    /// Sockets closed because more were waiting for their handshake than allowed.
    public internal(set) var displacedHandshakeCount = 0

    deinit {
        // The loop stopped with sockets still waiting: they were never lws's.
        for socket in adoptionQueue { socket.close() }
    }
}
