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
    /// The name of the vhost's protocol (what adopted sockets are bound to).
    private var protocolName: UnsafePointer<CChar>?
    /// Every socket lws has adopted for the server, until it frees it.
    private var sockets: [ObjectIdentifier: ServerSocket] = [:]
    /// The WebSocket connections among them.
    private var connections: [ObjectIdentifier: WebSocketConnection] = [:]
    /// Sockets that close at their deadline unless the peer closes first.
    private var closing: [ObjectIdentifier: ServerSocket] = [:]
    /// Accepted sockets that have not sent a whole request yet (their upgrade, or an HTTP
    /// request and its body; or the next one on a keep-alive connection), oldest first.
    private var pendingHandshakes = PendingHandshakes()
    /// Keep-alive sockets between requests: bounded and timed like pending handshakes,
    /// but kept apart from them (they have sent a request already).
    private var idleKeepAlive = PendingHandshakes()
    /// Sockets displaced from ``pendingHandshakes``, closed by ``closeDisplaced()``.
    private var displaced: Set<OpaquePointer> = []
    private var displacedClose: TimerQueue.Entry?
    /// The once-a-second timer of ``sweep()``.
    private var sweepTimer: TimerQueue.Entry?
    /// Accepted sockets (here or on another loop) waiting to be taken into lws, oldest
    /// first: at most ``Configuration/adoptionsPerPass`` a pass (``adoptQueued()``).
    private var adoptionQueue = Deque<AcceptedSocket>()
    /// Whether ``adoptQueued()`` runs at the end of this pass.
    private var adoptionScheduled = false
    /// TLS sockets taken into lws whose handshake is not done (no byte after it yet),
    /// oldest first with the time they stop counting; ``tlsInFlightSet`` holds those
    /// still counted. lws starts a handshake's costly part when the ClientHello
    /// arrives, which for sockets adopted earlier can be many in one pass: at most
    /// ``tlsHandshakesInFlight`` are adopted and not done at once.
    private var tlsInFlight = Deque<(wsi: OpaquePointer, until: Int64)>()
    private var tlsInFlightSet: Set<OpaquePointer> = []
    private var tlsInFlightTimer: TimerQueue.Entry?
    /// How long a TLS socket counts as a handshake in flight at most
    /// (``tlsInFlightNanoseconds``; tests lengthen it to see the bound on a busy host).
    var tlsInFlightHold = WebSocketServer.tlsInFlightNanoseconds
    /// The most TLS handshakes that were in flight at once, and how many times an
    /// adoption waited for one of them (for tests).
    private(set) var mostTLSHandshakesInFlight = 0
    private(set) var adoptionsThatWaitedForTLS = 0
    /// The most TLS handshakes a server has in flight, and how long one counts at most
    /// (a client that connects and sends nothing holds a place only this long).
    static let tlsHandshakesInFlight = 8
    static let tlsInFlightNanoseconds: Int64 = 100_000_000
    /// Sockets whose close handshake is complete, closed a few a pass, each for at most
    /// 2 ms of wall-clock time a pass: a close costs lws 4.1.6 (Debian's, built with its
    /// debug checks) a walk of its whole descriptor table and of every connection of the loop.
    private lazy var closes = EndOfPassQueue(
        eventLoop: eventLoop, perPass: { [weak self] in self?.configuration.closesPerPass ?? 1 },
        timePerPass: 2_000_000, step: { $0.killNow() })  // its WSI_DESTROY comes through socketFreed(_:)
    /// Sockets whose upgrade request is read and waits for its answer, answered a few a
    /// pass, for at most 2 ms a pass.
    private lazy var upgrades = EndOfPassQueue(
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

    private func startSweep() {
        sweepTimer = eventLoop.scheduleTimer(
            deadline: EventLoop.monotonicNanoseconds() + 1_000_000_000, interval: 1_000_000_000
        ) { [weak self] in
            self?.sweep()
        }
    }

    // MARK: - Sockets served on other loops

    /// Chooses where each socket this server accepts is served, before it is: returns
    /// what takes the socket (it then has another server ``adopt(_:)`` it, or closes it),
    /// or `nil` to have this server serve it. Set on the loop thread; `nil` serves every
    /// one here.
    public var socketDistributor: (() -> ((AcceptedSocket) -> Void)?)?

    /// Takes the socket lws just accepted on `listener` away from lws (nonzero: lws then
    /// closes its own descriptor, the server has a duplicate), with up to
    /// ``Configuration/adoptionsPerPass`` more that wait in the kernel's accept queue:
    /// each goes where ``socketDistributor`` says, or to this server's own queue
    /// (``adopt(_:)``). lws would otherwise accept every waiting socket in this pass
    /// and start serving each (a TLS handshake each) in the next. Zero (lws serves the
    /// socket itself) only when no duplicate can be made.
    func distribute(accepted descriptor: Int32, listener: OpaquePointer) -> Int32 {
        guard let socket = AcceptedSocket(duplicating: descriptor) else { return 0 }
        hand(socket)
        let listening = lws_get_socket_fd(listener)
        guard listening >= 0 else { return 1 }
        var more = configuration.effectiveAdoptionsPerPass - 1
        // Sockets left in the kernel's queue wait there rather than in the server's.
        while more > 0, adoptionQueue.count < configuration.maximumPendingHandshakes {
            let accepted = cws_accept_nonblocking(listening)
            guard accepted >= 0 else { break }
            more -= 1
            hand(AcceptedSocket(accepted: accepted))
        }
        return 1
    }

    private func hand(_ socket: AcceptedSocket) {
        if let take = socketDistributor?() {
            take(socket)
        } else {
            adopt(socket)
        }
    }

    /// Serves `socket`, which this server or one on another loop accepted (its upgrade or
    /// HTTP request, TLS when configured); closes it when this server is closed or lws
    /// cannot take it. Sockets are taken into lws at most
    /// ``Configuration/adoptionsPerPass`` a pass, at its end, oldest first.
    public func adopt(_ socket: AcceptedSocket) {
        eventLoop.preconditionInEventLoop()
        guard vhost != nil, !isClosed, !eventLoop.isDestroying else {
            socket.close()
            return
        }
        adoptionQueue.append(socket)
        scheduleAdoptions()
    }

    /// Sockets accepted and not yet taken into lws (for tests).
    var queuedAdoptionCount: Int { adoptionQueue.count }

    private func scheduleAdoptions() {
        guard !adoptionScheduled else { return }
        adoptionScheduled = true
        // The end of this pass, outside lws's callbacks; what remains, at the end of the
        // next (which polls without waiting, serving what this one adopted first).
        eventLoop.executeAtEndOfPass { [weak self] in self?.adoptQueued() }
    }

    private func adoptQueued() {
        adoptionScheduled = false
        let tls = configuration.tls != nil
        let now = EventLoop.monotonicNanoseconds()
        if tls { expireTLSInFlight(now: now) }
        var budget = configuration.effectiveAdoptionsPerPass
        while budget > 0, !adoptionQueue.isEmpty {
            if tls, tlsInFlightSet.count >= WebSocketServer.tlsHandshakesInFlight {
                // The next waits for a handshake to finish, or to stop counting.
                adoptionsThatWaitedForTLS += 1
                waitForTLSInFlight()
                return
            }
            let socket = adoptionQueue.removeFirst()
            budget -= 1
            guard let vhost, !isClosed, !eventLoop.isDestroying else {
                socket.close()
                continue
            }
            // On failure lws closes the descriptor itself.
            guard let wsi = cws_adopt_raw_socket(vhost, socket.descriptor, protocolName) else {
                logger.debug("an accepted socket could not be adopted")
                continue
            }
            if tls, tlsInFlightSet.insert(wsi).inserted {
                tlsInFlight.append((wsi, now + tlsInFlightHold))
                mostTLSHandshakesInFlight = max(mostTLSHandshakesInFlight, tlsInFlightSet.count)
            }
        }
        if !adoptionQueue.isEmpty { scheduleAdoptions() }
    }

    /// Drops the TLS sockets that stopped counting as handshakes in flight.
    private func expireTLSInFlight(now: Int64) {
        while let first = tlsInFlight.first, first.until <= now || !tlsInFlightSet.contains(first.wsi) {
            tlsInFlight.removeFirst()
            if first.until <= now { tlsInFlightSet.remove(first.wsi) }
        }
    }

    /// A TLS handshake in flight ended (done, or its socket freed): the next may start.
    private func tlsHandshakeEnded(_ wsi: OpaquePointer) {
        guard tlsInFlightSet.remove(wsi) != nil else { return }
        if !adoptionQueue.isEmpty { scheduleAdoptions() }
    }

    /// Adopts again when the oldest handshake in flight stops counting (unless one
    /// ends first).
    private func waitForTLSInFlight() {
        guard tlsInFlightTimer == nil, let first = tlsInFlight.first else { return }
        tlsInFlightTimer = eventLoop.scheduleTimer(deadline: first.until, interval: nil) { [weak self] in
            guard let self else { return }
            self.tlsInFlightTimer = nil
            if !self.adoptionQueue.isEmpty { self.scheduleAdoptions() }
        }
    }

    /// TLS handshakes adopted and not done (for tests).
    var tlsHandshakesInFlightCount: Int { tlsInFlightSet.count }

    /// Closes `socket` (its close handshake complete, its reading paused) at the end of
    /// this pass or a later one: at most ``Configuration/closesPerPass`` a pass, for at most
    /// 2 ms, oldest first.
    func closeSoon(_ socket: ServerSocket) {
        closes.append(socket)
    }

    /// Sockets whose close waits for a pass (for tests).
    var queuedCloseCount: Int { closes.count }
    /// The most sockets one pass has closed (for tests).
    var mostClosedInOnePass: Int { closes.mostInOnePass }

    /// Answers the upgrade request `socket` has read at the end of this pass or a later
    /// one: at most ``Configuration/upgradesPerPass`` a pass, for at most 2 ms, oldest first.
    func upgradeSoon(_ socket: ServerSocket) {
        upgrades.append(socket)
    }

    /// Upgrade requests read and not answered yet (for tests).
    var queuedUpgradeCount: Int { upgrades.count }
    /// The most upgrade requests one pass has answered (for tests).
    var mostUpgradedInOnePass: Int { upgrades.mostInOnePass }

    deinit {
        // The loop stopped with sockets still waiting: they were never lws's.
        for socket in adoptionQueue { socket.close() }
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

    // MARK: - Events from the callback dispatcher and the sockets

    func accepted(_ wsi: OpaquePointer) -> Bool {
        let deadline = EventLoop.monotonicNanoseconds() + Int64(max(1, configuration.handshakeTimeout)) * 1_000_000_000
        guard let oldest = pendingHandshakes.add(wsi, deadline: deadline, limit: configuration.maximumPendingHandshakes)
        else { return true }
        displacedHandshakeCount += 1
        closeSoon(displacing: oldest)
        return true
    }

    /// Closes `wsi`, displaced from a bounded set of waiting sockets.
    private func closeSoon(displacing wsi: OpaquePointer) {
        displaced.insert(wsi)
        // Not from inside lws's callback about another socket, and not with lws's own
        // asynchronous kill either (it waits for the once-a-second timeout check, and the
        // descriptors would pile up meanwhile): from a timer due now, which runs outside
        // lws's callbacks, right after this pass.
        if displacedClose == nil {
            displacedClose = eventLoop.scheduleTimer(deadline: EventLoop.monotonicNanoseconds(), interval: nil) { [weak self] in
                self?.closeDisplaced()
            }
        }
    }

    /// The first bytes of a TLS socket arrived, its TLS handshake done: its time to send
    /// a whole request starts now (as lws's request timeout did after TLS), so that slow
    /// TLS handshakes under load do not use it up.
    func tlsEstablished(_ wsi: OpaquePointer) {
        tlsHandshakeEnded(wsi)
        let deadline = EventLoop.monotonicNanoseconds() + Int64(max(1, configuration.handshakeTimeout)) * 1_000_000_000
        pendingHandshakes.restart(wsi, deadline: deadline)
    }

    func requestArrived(_ wsi: OpaquePointer) {
        pendingHandshakes.remove(wsi)
        idleKeepAlive.remove(wsi)
    }

    func freed(_ wsi: OpaquePointer) {
        tlsHandshakeEnded(wsi)
        pendingHandshakes.remove(wsi)
        idleKeepAlive.remove(wsi)
        displaced.remove(wsi)
    }

    private func closeDisplaced() {
        displacedClose = nil
        while let wsi = displaced.popFirst() {
            cws_kill_sync(wsi)  // its WSI_DESTROY comes through freed(_:)
        }
    }

    /// lws adopted `wsi` in the raw-skt role: its socket, kept in the per-session `slot`.
    func adopted(_ wsi: OpaquePointer, slot: UnsafeMutableRawPointer) -> Int32 {
        guard !eventLoop.isDestroying else { return -1 }
        let socket = ServerSocket(server: self, wsi: wsi)
        sockets[ObjectIdentifier(socket)] = socket
        WebSocketCallbackDispatcher.attach(socket, to: slot)
        return 0
    }

    /// lws frees `socket`'s wsi.
    func socketFreed(_ socket: ServerSocket) {
        // A keep-alive socket waiting for its next request is among the pending
        // handshakes, whether or not lws counted it as accepted (handed-over sockets).
        if let wsi = socket.wsi { freed(wsi) }
        socket.destroyed()
        sockets[ObjectIdentifier(socket)] = nil
        closing[ObjectIdentifier(socket)] = nil
    }

    /// A keep-alive socket waits for its next request: bounded and timed like a handshake.
    func waitingForRequest(_ wsi: OpaquePointer) {
        let deadline = EventLoop.monotonicNanoseconds() + Int64(max(1, configuration.handshakeTimeout)) * 1_000_000_000
        if let oldest = idleKeepAlive.add(wsi, deadline: deadline, limit: configuration.maximumPendingHandshakes) {
            closeSoon(displacing: oldest)
        }
    }

    /// `socket` closes at its deadline unless its peer closes first.
    func closesLater(_ socket: ServerSocket) {
        closing[ObjectIdentifier(socket)] = socket
    }

    /// A complete plain HTTP request, for the delegate.
    func deliver(_ exchange: HTTPExchange) {
        eventLoop.noteActivity()
        delegate.server(self, didReceive: exchange)
    }

    /// The connection of an upgrade request the server accepts.
    func makeConnection(for request: WebSocketUpgradeRequest, subprotocol: String?, peer: String?) -> WebSocketConnection {
        let connection = WebSocketConnection(
            eventLoop: eventLoop, role: .server, requestPath: request.path,
            authorization: request.authorization, limits: configuration.limits, logger: logger)
        connection.peer = peer
        connection.subprotocol = subprotocol
        if configuration.pingInterval > 0 {
            connection.keepalive = Keepalive(pingInterval: configuration.pingInterval, idleTimeout: configuration.idleTimeout)
        }
        connections[ObjectIdentifier(connection)] = connection
        return connection
    }

    /// The 101 answer of `connection` is out: it opens (or is closed at once when the
    /// server is closed or full).
    func upgraded(_ connection: WebSocketConnection, wsi: OpaquePointer) {
        eventLoop.noteActivity()
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

    /// The socket of `connection` closed.
    func connectionClosed(_ connection: WebSocketConnection) {
        eventLoop.noteActivity()
        if connection.isCounted {
            connection.isCounted = false
            openConnectionCount -= 1
            configuration.connectionTally?.release()
        }
        connection.handleClosed()
    }

    /// lws frees the socket of `connection`.
    func connectionDestroyed(_ connection: WebSocketConnection) {
        connectionClosed(connection)
        connection.handleDestroyed()
        connections[ObjectIdentifier(connection)] = nil
    }

    /// Plain HTTP requests being answered (for tests).
    var pendingExchangeCount: Int {
        sockets.values.reduce(0) { $0 + ($1.exchange == nil ? 0 : 1) }
    }

    /// Accepted sockets still waiting for their upgrade or HTTP request.
    public var pendingHandshakeCount: Int { pendingHandshakes.count }

    /// Sockets closed because more were waiting for their handshake than allowed.
    public private(set) var displacedHandshakeCount = 0

    /// Sockets closed because they did not send a whole request within
    /// ``Configuration/handshakeTimeout``.
    public private(set) var timedOutHandshakeCount = 0

    /// Once a second: sockets that have waited too long for their request, and closing
    /// sockets past their deadline, are closed; then every open connection's keepalive
    /// advances (silent peers are pinged, those silent for the idle timeout hung up on:
    /// a flag test per connection).
    private func sweep() {
        let now = EventLoop.monotonicNanoseconds()
        for wsi in pendingHandshakes.removeExpired(now: now) {
            timedOutHandshakeCount += 1
            cws_kill_sync(wsi)
        }
        for wsi in idleKeepAlive.removeExpired(now: now) {
            cws_kill_sync(wsi)
        }
        if !closing.isEmpty {
            var due: [OpaquePointer] = []
            for (key, socket) in closing {
                guard let deadline = socket.deadline else {
                    closing[key] = nil
                    continue
                }
                if deadline <= now, let wsi = socket.wsi { due.append(wsi) }
            }
            for wsi in due { cws_kill_sync(wsi) }
        }
        guard configuration.pingInterval > 0 else { return }
        for connection in connections.values where connection.isCounted {
            connection.keepaliveSecondPassed()
        }
    }
}
