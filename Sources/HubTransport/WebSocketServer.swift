import CWebsockets
import Logging

/// A WebSocket server endpoint: one lws vhost listening on `host:port` of an ``EventLoop``.
///
/// Confined to the loop thread: create it, ``start()`` it and use it there. After
/// ``start()`` the loop keeps the server alive until the loop shuts down.
public final class WebSocketServer {
    /// How the server listens and what it accepts.
    public struct Configuration: Sendable {
        /// The address to listen on (an IP address or an interface name).
        public var host: String
        /// The port; `0` picks an ephemeral one (read ``WebSocketServer/port`` after start).
        public var port: Int
        /// The subprotocol selected when a client offers it (clients offering none are
        /// accepted too).
        public var subprotocol: String
        /// Per-connection limits (maximum message size, fragment size).
        public var limits: WebSocketConnection.Limits
        /// Open connections beyond this are closed with 4429 right after the handshake.
        public var maximumConnections: Int
        /// Seconds of silence before lws sends a ping (0 disables keepalive).
        public var pingInterval: UInt16
        /// Seconds of silence (no pong either) before lws hangs up.
        public var idleTimeout: UInt16
        /// The size of lws's receive chunk (bytes).
        public var receiveBufferSize: Int
        /// The certificate and key to serve `wss://` with; `nil` serves plain `ws://`.
        public var tls: TLSConfiguration?

        /// Creates a configuration; defaults: `127.0.0.1`, ephemeral port, `hub.v1`, 1 MiB
        /// messages, 10,000 connections, ping after 30 s, hang up after 60 s, no TLS.
        public init(
            host: String = "127.0.0.1", port: Int = 0, subprotocol: String = "hub.v1",
            limits: WebSocketConnection.Limits = .init(), maximumConnections: Int = 10_000,
            pingInterval: UInt16 = 30, idleTimeout: UInt16 = 60, receiveBufferSize: Int = 32 << 10,
            tls: TLSConfiguration? = nil
        ) {
            self.tls = tls
            self.host = host
            self.port = port
            self.subprotocol = subprotocol
            self.limits = limits
            self.maximumConnections = maximumConnections
            self.pingInterval = pingInterval
            self.idleTimeout = idleTimeout
            self.receiveBufferSize = receiveBufferSize
        }
    }

    /// The loop the server runs on.
    public let eventLoop: EventLoop
    /// The configuration it was created with.
    public let configuration: Configuration
    /// Receives the connections. Held strongly.
    public let delegate: any WebSocketServerDelegate
    /// The bound port (the real one when ``Configuration/port`` was 0); 0 before start.
    public private(set) var port = 0
    /// Whether ``close(code:reason:)`` was called: new connections are refused.
    public private(set) var isClosed = false

    private let logger = Logger(label: "hub.transport.server")
    private var vhost: OpaquePointer?
    private var connections: [ObjectIdentifier: WebSocketConnection] = [:]
    /// Connections open and counted against the maximum.
    public private(set) var openConnectionCount = 0

    /// Creates a server on `eventLoop` (loop thread only). Call ``start()`` to listen.
    public init(eventLoop: EventLoop, configuration: Configuration = .init(), delegate: any WebSocketServerDelegate) {
        eventLoop.preconditionInEventLoop()
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.delegate = delegate
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
    ///   when lws cannot create the listening vhost (or cannot load the TLS files).
    public func start() throws {
        eventLoop.preconditionInEventLoop()
        guard vhost == nil else { return }
        guard !eventLoop.isDestroying else {
            throw TransportError(code: .eventLoopShutDown, message: "the event loop is shutting down")
        }
        guard (0...65535).contains(configuration.port) else {
            throw TransportError(code: .invalidArgument, message: "port \(configuration.port) is out of range")
        }
        guard configuration.port == 0 || !eventLoop.listeningPorts.contains(configuration.port) else {
            throw TransportError(
                code: .listenFailed, message: "another server of this event loop listens on \(configuration.port)")
        }
        if let tls = configuration.tls {
            try tls.validate()
        }
        let loop = eventLoop
        let protocols = loop.allocate(lws_protocols.self, count: 2)
        protocols[0].name = UnsafePointer(loop.cString(configuration.subprotocol))
        protocols[0].callback = cwsServerCallback
        protocols[0].per_session_data_size = MemoryLayout<UnsafeMutableRawPointer?>.size
        protocols[0].rx_buffer_size = max(configuration.receiveBufferSize, 128)
        protocols[0].user = Unmanaged.passUnretained(self).toOpaque()

        let retry = loop.allocate(lws_retry_bo_t.self, count: 1)
        retry.pointee.secs_since_valid_ping = configuration.pingInterval
        retry.pointee.secs_since_valid_hangup = max(configuration.idleTimeout, configuration.pingInterval)

        var info = lws_context_creation_info()
        info.port = Int32(configuration.port)
        info.iface = UnsafePointer(loop.cString(configuration.host))
        info.vhost_name = UnsafePointer(loop.cString("hub-server-\(ObjectIdentifier(self).hashValue)"))
        info.protocols = UnsafePointer(protocols)
        if configuration.pingInterval > 0 {
            info.retry_and_idle_policy = UnsafePointer(retry)
        }
        info.options |= cws_option_fail_upon_unable_to_bind
        if !configuration.host.contains(":") {
            info.options |= cws_option_disable_ipv6
        }
        if let tls = configuration.tls {
            info.options |= cws_option_do_ssl_global_init
            info.ssl_cert_filepath = UnsafePointer(loop.cString(tls.certificatePath))
            info.ssl_private_key_filepath = UnsafePointer(loop.cString(tls.privateKeyPath))
        }
        // lws holds pointers into this object from now on.
        loop.retainUntilShutdown(self)
        guard let vhost = lws_create_vhost(loop.lwsContext, &info) else {
            var message = "cannot listen on \(configuration.host):\(configuration.port)"
            if let tls = configuration.tls {
                message += " with TLS (is '\(tls.certificatePath)' a PEM certificate and '\(tls.privateKeyPath)' its PEM private key?)"
            }
            throw TransportError(code: .listenFailed, message: message)
        }
        let bound = Int(lws_get_vhost_listen_port(vhost))
        guard bound > 0 else {
            throw TransportError(
                code: .listenFailed, message: "cannot listen on \(configuration.host):\(configuration.port)")
        }
        self.vhost = vhost
        self.port = bound
        loop.listeningPorts.insert(bound)
        logger.debug("listening", metadata: ["host": "\(configuration.host)", "port": "\(bound)"])
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

    // MARK: - Protocol callback events

    func filter(_ wsi: OpaquePointer, slot: UnsafeMutableRawPointer) -> Int32 {
        guard !isClosed else { return 1 }
        let request = WebSocketUpgradeRequest(
            path: WebSocketServer.header(wsi, WSI_TOKEN_GET_URI) ?? "/",
            authorization: WebSocketServer.header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION))
        guard delegate.server(self, shouldAccept: request) else { return 1 }
        let connection = WebSocketConnection(
            eventLoop: eventLoop, role: .server, requestPath: request.path,
            authorization: request.authorization, limits: configuration.limits)
        if lws_hdr_total_length(wsi, WSI_TOKEN_PROTOCOL) > 0 {
            // lws only binds a connection that offered subprotocols to a matching one: ours.
            connection.subprotocol = configuration.subprotocol
        }
        connections[ObjectIdentifier(connection)] = connection
        slot.storeBytes(of: Unmanaged.passUnretained(connection).toOpaque(), as: UnsafeMutableRawPointer?.self)
        return 0
    }

    func established(_ connection: WebSocketConnection, wsi: OpaquePointer) {
        connection.didEstablish(wsi)
        if isClosed || openConnectionCount >= configuration.maximumConnections {
            connection.isRefused = true
            let code: WebSocketCloseCode = isClosed ? .goingAway : .tooManyConnections
            connection.close(code: code, reason: isClosed ? "server shutting down" : "too many connections")
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
        }
        connection.handleClosed()
    }

    func destroyed(_ connection: WebSocketConnection) {
        closed(connection)
        connection.handleDestroyed()
        connections[ObjectIdentifier(connection)] = nil
    }

    static func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        let copied = lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token)
        guard copied >= 0 else { return nil }
        return String(decoding: buffer.prefix(Int(copied)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The server protocol callback: a top-level non-capturing function, as lws requires.
/// The server is the protocol's `user`; each connection sits in the per-session slot.
private func cwsServerCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    switch reason {
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        return 0
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        guard let wsi, let user, let server = serverOf(wsi) else { return 1 }
        return server.filter(wsi, slot: user)
    case LWS_CALLBACK_ESTABLISHED:
        guard let wsi, let server = serverOf(wsi), let connection = connectionIn(user) else { return -1 }
        server.established(connection, wsi: wsi)
        return 0
    case LWS_CALLBACK_RECEIVE:
        guard let connection = connectionIn(user) else { return -1 }
        return connection.handleReceive(input, length)
    case LWS_CALLBACK_SERVER_WRITEABLE:
        guard let connection = connectionIn(user) else { return -1 }
        return connection.handleWritable()
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        connectionIn(user)?.handlePeerClose(input, length)
        return 0
    case LWS_CALLBACK_CLOSED:
        if let wsi, let server = serverOf(wsi), let connection = connectionIn(user) {
            server.closed(connection)
        }
        return 0
    case LWS_CALLBACK_WSI_DESTROY:
        if let wsi, let server = serverOf(wsi), let user, let connection = connectionIn(user) {
            user.storeBytes(of: nil, as: UnsafeMutableRawPointer?.self)
            server.destroyed(connection)
        }
        return 0
    default:
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
}

private func serverOf(_ wsi: OpaquePointer) -> WebSocketServer? {
    guard let proto = lws_get_protocol(wsi), let raw = proto.pointee.user else { return nil }
    return Unmanaged<WebSocketServer>.fromOpaque(raw).takeUnretainedValue()
}

private func connectionIn(_ slot: UnsafeMutableRawPointer?) -> WebSocketConnection? {
    guard let slot, let raw = slot.load(as: UnsafeMutableRawPointer?.self) else { return nil }
    return Unmanaged<WebSocketConnection>.fromOpaque(raw).takeUnretainedValue()
}
