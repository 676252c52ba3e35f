import CWebsockets
import DequeModule
import Logging

// What the callback dispatcher and the server's sockets tell it: sockets accepted,
// adopted and freed, requests and upgrades arrived, connections closed and destroyed.
extension WebSocketServer {
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
    func closeSoon(displacing wsi: OpaquePointer) {
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

    func closeDisplaced() {
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
}
