import HubRegistry
import HubTransport
import Logging

/// A running hub broker: an event loop, a WebSocket server speaking protocol
/// v1, and the hub its sessions work on.
///
/// Start it with ``start(setUp:)``, which returns the bound port (ask for
/// port 0 to get an ephemeral one), and stop it with ``shutdown()``, which
/// closes every connection with 1001 and returns promptly. Everything of the
/// hub runs on the service's event loop; ``withHub(_:)`` runs code there.
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
        /// The most simultaneous connections; more are closed with 4429.
        public var maxConnections: Int
        /// Seconds between keepalive pings of an idle connection (0: none).
        public var pingInterval: UInt16
        /// Seconds without an answer to pings before a connection is dropped.
        public var idleTimeout: UInt16
        /// The certificate and private key to serve `wss://` with; `nil` serves `ws://`.
        public var tls: TLSConfiguration?

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
    /// The configuration the service was made with.
    public let configuration: Configuration
    private let core: LoopBound<ServiceCore>

    /// A service on a new event loop; nothing listens until ``start(setUp:)``.
    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "hub.service")) throws {
        let loop = try EventLoop(configuration: .init(name: "hub-loop"))
        eventLoop = loop
        self.configuration = configuration
        // Made here, then only used on the loop: the loop's work queue orders
        // every later use after this initialisation.
        core = LoopBound(ServiceCore(configuration: configuration, eventLoop: loop, logger: logger), eventLoop: loop)
    }

    /// Sets up the hub with `setUp` (declare subjects, triggers…) and starts
    /// listening. Returns the bound port.
    @discardableResult
    public func start(setUp: @Sendable @escaping (Hub) throws -> Void = { _ in }) async throws -> Int {
        let core = self.core
        return try await eventLoop.submit {
            try setUp(core.value.hub)
            return try core.value.start()
        }
    }

    /// The bound port (0 before ``start(setUp:)``).
    public var port: Int {
        get async { (try? await eventLoop.submit { [core] in core.value.port }) ?? 0 }
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

    /// Stops the service: every session is ended (its subscriptions cancelled,
    /// its connection closed with 1001), the listener closed, and the loop
    /// stopped once the close frames are out (or after `grace`). Idempotent.
    public func shutdown(grace: Duration = .seconds(2)) async {
        let core = self.core
        _ = try? await eventLoop.submit { core.value.stop() }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: grace)
        while clock.now < deadline {
            let open = (try? await eventLoop.submit { core.value.openConnections }) ?? 0
            if open == 0 { break }
            try? await Task.sleep(for: .milliseconds(5))
        }
        eventLoop.shutdown()
    }
}

/// The loop-confined part of a ``HubService``: the hub, the server and the sessions.
final class ServiceCore: WebSocketServerDelegate {
    let hub: Hub
    let configuration: HubService.Configuration
    let eventLoop: EventLoop
    let logger: Logger
    let encodingCache = ValueEncodingCache()
    private var server: WebSocketServer?
    private var handlers: [ObjectIdentifier: SessionHandler] = [:]
    private(set) var port = 0
    private var stopped = false

    init(configuration: HubService.Configuration, eventLoop: EventLoop, logger: Logger) {
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.logger = logger
        hub = Hub(configuration: configuration.hub, scheduler: EventLoopScheduler(eventLoop: eventLoop))
    }

    var openConnections: Int { server?.openConnectionCount ?? 0 }

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
            queuedBytes: server?.openConnections.reduce(0) { $0 + $1.queuedBytes } ?? 0,
            encodingCacheHits: encodingCache.hits,
            encodingCacheMisses: encodingCache.misses,
            writeCalls: writeCalls, messagesWritten: messagesWritten)
    }

    func start() throws -> Int {
        if let server { return server.port }
        let server = WebSocketServer(
            eventLoop: eventLoop,
            configuration: .init(
                host: configuration.host, port: configuration.port, subprotocol: "hub.v1",
                limits: .init(maximumMessageSize: configuration.maxMessageSize),
                maximumConnections: configuration.maxConnections, connectionLimitCloseCode: WebSocketCloseCode(4429),
                pingInterval: configuration.pingInterval, idleTimeout: configuration.idleTimeout,
                tls: configuration.tls),
            delegate: self)
        try server.start()
        self.server = server
        port = server.port
        let scheme = configuration.tls == nil ? "ws" : "wss"
        logger.info("listening", metadata: ["url": "\(scheme)://\(configuration.host):\(server.port)/"])
        return server.port
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        let live = handlers.values
        for handler in live { handler.session?.shutDown() }
        // The sessions' last messages (their subscriptions' shutting_down) go out before
        // the close frames; shutdown(grace:) bounds how long that may take.
        server?.close(code: .goingAway, reason: "server shutting down", discardingQueued: false)
        logger.info("stopped")
    }

    func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
        let handler = SessionHandler(connection: connection, core: self)
        handlers[ObjectIdentifier(handler)] = handler
        connection.handler = handler
    }

    func forget(_ handler: SessionHandler) {
        closedWriteCalls += handler.writeCalls
        closedMessagesWritten += handler.messagesWritten
        handlers.removeValue(forKey: ObjectIdentifier(handler))
    }

    func makeSession(for handler: SessionHandler, authorization: String?) -> Session {
        let id = String(UInt64.random(in: 1...UInt64.max), radix: 16)
        var sessionLogger = logger
        sessionLogger[metadataKey: "session"] = "\(id)"
        return Session(
            id: id, hub: hub, connection: handler, configuration: configuration.session,
            authorization: authorization, encodingCache: encodingCache, logger: sessionLogger)
    }
}

/// Connects one WebSocket connection to its ``Session``.
final class SessionHandler: WebSocketConnectionHandler, SessionConnection {
    private let connection: WebSocketConnection
    private unowned let core: ServiceCore
    private(set) var session: Session?

    init(connection: WebSocketConnection, core: ServiceCore) {
        self.connection = connection
        self.core = core
    }

    func connectionDidOpen(_ connection: WebSocketConnection) {
        let session = core.makeSession(for: self, authorization: connection.authorization)
        self.session = session
        session.start()
    }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        switch kind {
        case .text: session?.receive(text: payload)
        case .binary: session?.receiveBinary()
        }
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        session?.connectionClosed()
        session = nil
        core.forget(self)
    }

    /// The connection's raw writes so far.
    var writeCalls: Int { connection.writeCalls }
    /// The connection's messages written so far.
    var messagesWritten: Int { connection.messagesWritten }

    // MARK: SessionConnection

    func sendMessage(_ build: (inout [UInt8]) -> Void) -> Bool {
        connection.sendFrame(kind: .text, build)
    }

    func sendMessage(prefix: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, suffix: UnsafeRawBufferPointer) -> Bool {
        connection.send(prefix: prefix, body: body, suffix: suffix, kind: .text)
    }

    func sendBatched(key: UInt64, closing: [UInt8], _ append: (inout [UInt8], Bool) -> Void) -> Bool {
        connection.sendCoalescing(key: key, kind: .text, closing: closing, append)
    }

    var queuedBytes: Int { connection.queuedBytes }

    func close(code: UInt16, reason: String, discardingQueued: Bool) {
        connection.close(code: WebSocketCloseCode(code), reason: reason, discardingQueued: discardingQueued)
    }

    func abort() {
        connection.abort()
    }
}
