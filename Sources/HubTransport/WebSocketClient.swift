import CWebsockets
import Logging

/// A WebSocket client endpoint: opens `ws://` and `wss://` connections from an ``EventLoop``.
///
/// Confined to the loop thread. The loop keeps the client alive until it shuts down.
public final class WebSocketClient {
    /// Limits and keepalive of the connections this client opens.
    public struct Configuration: Sendable {
        /// Per-connection limits (maximum message size, fragment size).
        public var limits: WebSocketConnection.Limits
        /// Seconds of silence before lws sends a ping (0 disables keepalive).
        public var pingInterval: UInt16
        /// Seconds of silence (no pong either) before lws hangs up.
        public var idleTimeout: UInt16
        /// The size of lws's receive chunk (bytes).
        public var receiveBufferSize: Int

        /// Creates a configuration; defaults: 1 MiB messages, ping after 30 s, hang up after 60 s.
        public init(
            limits: WebSocketConnection.Limits = .init(), pingInterval: UInt16 = 30, idleTimeout: UInt16 = 60,
            receiveBufferSize: Int = 32 << 10
        ) {
            self.limits = limits
            self.pingInterval = pingInterval
            self.idleTimeout = idleTimeout
            self.receiveBufferSize = receiveBufferSize
        }
    }

    /// The name of the client vhost's only protocol (bound when no subprotocol is offered).
    static let localProtocolName = "hub.v1"

    /// The loop the client runs on.
    public let eventLoop: EventLoop
    /// The configuration it was created with.
    public let configuration: Configuration

    private let logger = Logger(label: "hub.transport.client")
    private var vhost: OpaquePointer?
    /// TLS vhosts, one per CA file (`""`: the system's CAs): lws keeps the trusted CAs
    /// in the vhost's client SSL_CTX.
    private var tlsVhosts: [String: OpaquePointer] = [:]
    private var protocolName: UnsafeMutablePointer<CChar>?
    private var retryPolicy: UnsafeMutablePointer<lws_retry_bo_t>?
    private var connections: [ObjectIdentifier: WebSocketConnection] = [:]

    /// Creates a client on `eventLoop` (loop thread only).
    public init(eventLoop: EventLoop, configuration: Configuration = .init()) {
        eventLoop.preconditionInEventLoop()
        self.eventLoop = eventLoop
        self.configuration = configuration
    }

    /// Starts connecting to `ws://host:port/path`, or `wss://host:port/path` when `tls`
    /// is given.
    ///
    /// The returned connection is `.connecting`; `handler` then receives either
    /// `connectionDidOpen` or `connection(_:didFailToConnect:)` (a ``TransportError`` with
    /// code `connection_failed`, also for failures lws reports synchronously). Messages
    /// sent before the connection opens are queued.
    ///
    /// - Parameters:
    ///   - subprotocol: offered in `Sec-WebSocket-Protocol`; `nil` offers none.
    ///   - authorization: the `Authorization` header value (for example `Bearer t0k`).
    ///   - tls: connect with TLS, verifying the server as it says; a CA file that cannot
    ///     be read fails the connection with a message naming it.
    @discardableResult
    public func connect(
        host: String, port: Int, path: String = "/", subprotocol: String? = "hub.v1",
        authorization: String? = nil, tls: ClientTLS? = nil, handler: any WebSocketConnectionHandler
    ) -> WebSocketConnection {
        eventLoop.preconditionInEventLoop()
        let connection = WebSocketConnection(
            eventLoop: eventLoop, role: .client, requestPath: path, authorization: authorization,
            limits: configuration.limits)
        connection.handler = handler
        guard (1...65535).contains(port) else {
            connection.handleConnectionError("port \(port) is out of range")
            return connection
        }
        guard !eventLoop.isDestroying else {
            connection.handleConnectionError("the event loop is shutting down")
            return connection
        }
        if let caFile = tls?.caFilePath {
            do {
                try TLSConfiguration.checkReadable(caFile, role: "CA")
            } catch {
                connection.handleConnectionError(error.message)
                return connection
            }
        }
        let vhost: OpaquePointer?
        if let tls { vhost = ensureTLSVhost(caFile: tls.caFilePath) } else { vhost = ensureVhost() }
        guard let vhost else {
            connection.handleConnectionError(
                tls == nil ? "cannot create the client vhost" : "cannot create the TLS client vhost")
            return connection
        }
        connections[ObjectIdentifier(connection)] = connection
        connection.usesTLS = tls != nil
        func own(_ string: String) -> UnsafePointer<CChar> {
            let copy = strdup(string)!
            connection.ownedCStrings.append(copy)
            return UnsafePointer(copy)
        }
        let hostHeader = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var info = lws_client_connect_info()
        info.context = eventLoop.lwsContext
        info.vhost = vhost
        info.address = own(host)
        info.port = Int32(port)
        if let tls {
            info.ssl_connection = Int32(cws_lccscf_use_ssl | (tls.allowsSelfSigned ? cws_lccscf_allow_selfsigned : 0))
        } else {
            info.ssl_connection = 0
        }
        info.path = own(path.hasPrefix("/") ? path : "/" + path)
        info.host = own(hostHeader)
        info.origin = own(hostHeader)
        info.protocol = subprotocol.map { own($0) }
        info.local_protocol_name = UnsafePointer(protocolName)
        info.ietf_version_or_minus_one = -1
        info.userdata = Unmanaged.passUnretained(connection).toOpaque()
        if configuration.pingInterval > 0, let retryPolicy {
            info.retry_and_idle_policy = UnsafePointer(retryPolicy)
        }
        if lws_client_connect_via_info(&info) == nil {
            connection.handleConnectionError("cannot connect to \(hostHeader)")
            connections[ObjectIdentifier(connection)] = nil
        }
        return connection
    }

    private func ensureVhost() -> OpaquePointer? {
        if let vhost { return vhost }
        guard let vhost = makeVhost(caFile: nil, tls: false) else { return nil }
        self.vhost = vhost
        return vhost
    }

    private func ensureTLSVhost(caFile: String?) -> OpaquePointer? {
        let key = caFile ?? ""
        if let vhost = tlsVhosts[key] { return vhost }
        guard let vhost = makeVhost(caFile: caFile, tls: true) else { return nil }
        tlsVhosts[key] = vhost
        return vhost
    }

    private func makeVhost(caFile: String?, tls: Bool) -> OpaquePointer? {
        let loop = eventLoop
        if protocols != nil {
            return createVhost(caFile: caFile, tls: tls)
        }
        let name = loop.cString(WebSocketClient.localProtocolName)
        let protocols = loop.allocate(lws_protocols.self, count: 2)
        protocols[0].name = UnsafePointer(name)
        protocols[0].callback = cwsClientCallback
        protocols[0].per_session_data_size = 0
        protocols[0].rx_buffer_size = max(configuration.receiveBufferSize, 128)
        protocols[0].user = Unmanaged.passUnretained(self).toOpaque()
        let retry = loop.allocate(lws_retry_bo_t.self, count: 1)
        retry.pointee.secs_since_valid_ping = configuration.pingInterval
        retry.pointee.secs_since_valid_hangup = max(configuration.idleTimeout, configuration.pingInterval)

        self.protocolName = name
        self.retryPolicy = retry
        self.protocols = protocols
        loop.retainUntilShutdown(self)
        return createVhost(caFile: caFile, tls: tls)
    }

    private var protocols: UnsafeMutablePointer<lws_protocols>?

    private func createVhost(caFile: String?, tls: Bool) -> OpaquePointer? {
        let loop = eventLoop
        var info = lws_context_creation_info()
        info.port = cws_context_port_no_listen
        let suffix = tls ? "-tls-\(tlsVhosts.count)" : ""
        info.vhost_name = UnsafePointer(loop.cString("hub-client-\(ObjectIdentifier(self).hashValue)\(suffix)"))
        info.protocols = UnsafePointer(protocols)
        if tls {
            info.options |= cws_option_do_ssl_global_init
            if let caFile {
                info.client_ssl_ca_filepath = UnsafePointer(loop.cString(caFile))
            }
        }
        guard let vhost = lws_create_vhost(loop.lwsContext, &info) else {
            logger.error("cannot create the client vhost", metadata: ["tls": "\(tls)"])
            return nil
        }
        return vhost
    }

    func destroyed(_ connection: WebSocketConnection) {
        connection.handleDestroyed()
        connections[ObjectIdentifier(connection)] = nil
    }
}

/// The client protocol callback: a top-level non-capturing function, as lws requires.
/// Each connection is its wsi's user data (set with `userdata` at connect).
private func cwsClientCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    switch reason {
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        return 0
    case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
        guard let wsi, let input, let connection = clientConnection(wsi, user) else { return 0 }
        guard let authorization = connection.authorization else { return 0 }
        var value = Array(authorization.utf8)
        let failed = value.withUnsafeMutableBufferPointer { buffer in
            cws_append_handshake_header(
                wsi, WSI_TOKEN_HTTP_AUTHORIZATION, buffer.baseAddress, Int32(buffer.count), input, length)
        }
        return failed != 0 ? -1 : 0
    case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH:
        // The server's handshake headers are readable here: note the selected subprotocol.
        if let wsi, let connection = clientConnection(wsi, user) {
            connection.subprotocol = WebSocketServer.header(wsi, WSI_TOKEN_PROTOCOL)
        }
        return 0
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        guard let wsi, let connection = clientConnection(wsi, user) else { return -1 }
        connection.didEstablish(wsi)
        connection.notifyOpen()
        return 0
    case LWS_CALLBACK_CLIENT_RECEIVE:
        guard let wsi, let connection = clientConnection(wsi, user) else { return -1 }
        return connection.handleReceive(input, length)
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        guard let wsi, let connection = clientConnection(wsi, user) else { return -1 }
        return connection.handleWritable()
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        if let wsi { clientConnection(wsi, user)?.handlePeerClose(input, length) }
        return 0
    case LWS_CALLBACK_CLIENT_CLOSED:
        if let wsi { clientConnection(wsi, user)?.handleClosed() }
        return 0
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        guard let wsi, let connection = clientConnection(wsi, user) else { return 0 }
        var message = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "connection error"
        if connection.usesTLS, message.lowercased().contains("ssl") || message.lowercased().contains("tls") {
            message = "TLS handshake failed (\(message)): the server's certificate is not trusted (self-signed "
                + "or from an unknown CA: allow self-signed certificates or give a CA file), does not name "
                + "the host, or the server does not speak TLS"
        }
        connection.handleConnectionError(message)
        return 0
    case LWS_CALLBACK_WSI_DESTROY:
        guard let wsi, let connection = clientConnection(wsi, user) else { return 0 }
        if let proto = lws_get_protocol(wsi), let raw = proto.pointee.user {
            Unmanaged<WebSocketClient>.fromOpaque(raw).takeUnretainedValue().destroyed(connection)
        } else {
            connection.handleDestroyed()
        }
        return 0
    default:
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
}

private func clientConnection(_ wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?) -> WebSocketConnection? {
    guard let raw = user ?? lws_wsi_user(wsi) else { return nil }
    return Unmanaged<WebSocketConnection>.fromOpaque(raw).takeUnretainedValue()
}
