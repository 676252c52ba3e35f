import CWebsockets
import Logging

/// A WebSocket client endpoint: opens `ws://` and `wss://` connections from an ``EventLoop``.
///
/// Confined to the loop thread. The loop keeps the client alive until it shuts down.
public final class WebSocketClient: WebSocketEndpoint {
    /// The name of the client vhost's only protocol (bound when no subprotocol is offered).
    static let localProtocolName = "hub.v1"

    /// The loop the client runs on.
    public let eventLoop: EventLoop
    /// The configuration it was created with.
    public let configuration: Configuration

    private let logger: Logger
    private var vhost: OpaquePointer?
    /// TLS vhosts, one per CA file (`""`: the system's CAs): lws keeps the trusted CAs
    /// in the vhost's client SSL_CTX.
    private var tlsVhosts: [String: OpaquePointer] = [:]
    /// The vhosts' protocol table (shared by every vhost of the client).
    private var protocols: UnsafeMutablePointer<lws_protocols>?
    private var keepalivePolicy: UnsafeMutablePointer<lws_retry_bo_t>?
    private var connections: [ObjectIdentifier: WebSocketConnection] = [:]

    /// Creates a client on `eventLoop` (loop thread only).
    ///
    /// - Parameter logger: where the client and its connections log; by default the
    ///   loop's logger.
    public init(eventLoop: EventLoop, configuration: Configuration = .init(), logger: Logger? = nil) {
        eventLoop.preconditionInEventLoop()
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.logger = logger ?? eventLoop.logger
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
            limits: configuration.limits, logger: logger)
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
        // The connection's strings and per-session slot live as long as it does (past
        // lws's last callback for it).
        let arena = connection.clientArena
        let slot = arena.allocate(UnsafeMutableRawPointer?.self)
        WebSocketCallbackDispatcher.attach(connection, to: slot)
        let hostHeader = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var info = lws_client_connect_info()
        info.context = eventLoop.lwsContext
        info.vhost = vhost
        info.address = UnsafePointer(arena.cString(host))
        info.port = Int32(port)
        info.ssl_connection = TLSContextSetup.connectionFlags(tls)
        info.path = UnsafePointer(arena.cString(path.hasPrefix("/") ? path : "/" + path))
        info.host = UnsafePointer(arena.cString(hostHeader))
        info.origin = UnsafePointer(arena.cString(hostHeader))
        info.protocol = subprotocol.map { UnsafePointer(arena.cString($0)) }
        info.local_protocol_name = protocols?[0].name
        info.ietf_version_or_minus_one = -1
        info.userdata = UnsafeMutableRawPointer(slot)
        if configuration.pingInterval > 0, let keepalivePolicy {
            info.retry_and_idle_policy = UnsafePointer(keepalivePolicy)
        }
        if lws_client_connect_via_info(&info) == nil {
            connection.handleConnectionError("cannot connect to \(hostHeader)")
            connections[ObjectIdentifier(connection)] = nil
        }
        return connection
    }

    /// lws's explanation of a failed connection, with what to check when it is a TLS
    /// handshake failure.
    static func explainConnectionFailure(_ lwsMessage: String, usesTLS: Bool) -> String {
        let lowercased = lwsMessage.lowercased()
        guard usesTLS, lowercased.contains("ssl") || lowercased.contains("tls") else { return lwsMessage }
        return "TLS handshake failed (\(lwsMessage)): the server's certificate is not trusted (self-signed "
            + "or from an unknown CA: allow self-signed certificates or give a CA file), does not name "
            + "the host, or the server does not speak TLS"
    }

    // MARK: - Vhosts

    private func ensureVhost() -> OpaquePointer? {
        if let vhost { return vhost }
        guard let vhost = createVhost(caFile: nil, tls: false) else { return nil }
        self.vhost = vhost
        return vhost
    }

    private func ensureTLSVhost(caFile: String?) -> OpaquePointer? {
        let key = caFile ?? ""
        if let vhost = tlsVhosts[key] { return vhost }
        guard let vhost = createVhost(caFile: caFile, tls: true) else { return nil }
        tlsVhosts[key] = vhost
        return vhost
    }

    /// The protocol table every vhost of the client shares (made with the first vhost).
    private func protocolTable() -> UnsafeMutablePointer<lws_protocols> {
        if let protocols { return protocols }
        let protocols = WebSocketCallbackDispatcher.protocolTable(
            for: self, on: eventLoop, name: WebSocketClient.localProtocolName,
            receiveBufferSize: configuration.receiveBufferSize, limits: configuration.limits)
        keepalivePolicy = eventLoop.arena.keepalivePolicy(
            pingInterval: configuration.pingInterval, idleTimeout: configuration.idleTimeout)
        self.protocols = protocols
        return protocols
    }

    private func createVhost(caFile: String?, tls: Bool) -> OpaquePointer? {
        let arena = eventLoop.arena
        var info = lws_context_creation_info()
        info.port = cws_context_port_no_listen
        let suffix = tls ? "-tls-\(tlsVhosts.count)" : ""
        info.vhost_name = UnsafePointer(arena.cString("hub-client-\(ObjectIdentifier(self).hashValue)\(suffix)"))
        info.protocols = UnsafePointer(protocolTable())
        if tls {
            TLSContextSetup.configureClientVhost(&info, caFile: caFile, arena: arena)
        }
        guard let vhost = lws_create_vhost(eventLoop.lwsContext, &info) else {
            logger.error("cannot create the client vhost", metadata: ["tls": "\(tls)"])
            return nil
        }
        return vhost
    }

    // MARK: - Events from the callback dispatcher

    func destroyed(_ connection: WebSocketConnection) {
        connection.handleDestroyed()
        connections[ObjectIdentifier(connection)] = nil
    }
}
