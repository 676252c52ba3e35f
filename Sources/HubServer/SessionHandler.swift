import HubRegistry
import HubValue
import HubTransport
import HubWire
import Logging

/// What every session of a service is made with: the hub, the sessions'
/// configuration, the loop's encoding cache and the service's logger.
struct SessionFactory {
    let hub: Hub
    let configuration: SessionConfiguration
    let encodingCache: ValueEncodingCache
    let logger: Logger
    let counters: ServiceCounters
    /// The service, for `list` and the admin operations.
    weak var service: (any ServiceControl)?
    /// Checks tokens (`nil`: no authentication).
    var authenticator: Authenticator?
    /// Bounds the connections of the service and of each identity.
    weak var admission: Admission?

    /// Makes the session of a new connection: counts and logs it, emits `connect`.
    /// Returns the session (the caller keeps it, then starts it) and the connection's logger.
    func open(
        on connection: any SessionConnection, authorization: String?, peer: String?, path: String
    ) -> (Session, Logger) {
        counters.connectionsOpened += 1
        let session = makeSession(on: connection, authorization: authorization, peer: peer)
        var logger = self.logger
        logger[metadataKey: "session"] = "\(session.id)"
        if let peer { logger[metadataKey: "peer"] = "\(peer)" }
        logger.info("connection opened", metadata: ["path": "\(path)"])
        counters.emit("connect", [
            "session": .string(session.id), "peer": peer.map(Value.string) ?? .null, "path": .string(path),
        ])
        return (session, logger)
    }

    /// Ends the session of a connection that closed with `code` (none: no close
    /// frame): logs it, emits `disconnect`.
    func close(
        _ session: Session, logger: Logger, openedAt: Int64, code: Int?, reason: String, peer: String?,
        bytesReceived: Int, bytesSent: Int
    ) {
        var logger = logger
        if let client = session.clientName { logger[metadataKey: "client"] = "\(client)" }
        let seconds = Double(Hub.systemWallClock().nanoseconds - openedAt) / 1e9
        logger.info(
            "connection closed",
            metadata: [
                "code": "\(code.map { String($0) } ?? "none")", "reason": "\(reason)",
                "authenticated": "\(session.isAuthenticated)", "identity": "\(session.identity?.name ?? "none")",
                "seconds": "\((seconds * 1000).rounded() / 1000)", "problems": "\(session.problemCount)",
                "bytes_in": "\(bytesReceived)", "bytes_out": "\(bytesSent)",
            ])
        counters.emit("disconnect", [
            "session": .string(session.id), "peer": peer.map(Value.string) ?? .null,
            "client": session.clientName.map(Value.string) ?? .null,
            "identity": session.identity.map { .string($0.name) } ?? .null,
            "code": code.map { .int(Int64($0)) } ?? .null, "reason": .string(reason),
        ])
        session.connectionClosed()
    }

    /// Makes the session of one HTTP API request: not a connection of its own (no
    /// `connect` event, no log line), but authenticated, admitted and limited as one
    /// while it lasts.
    func openRequest(on connection: any SessionConnection, authorization: String?, peer: String?) -> Session {
        makeSession(on: connection, authorization: authorization, peer: peer)
    }

    /// A session with a fresh id on `connection`, whose client is at `peer`.
    private func makeSession(on connection: any SessionConnection, authorization: String?, peer: String?) -> Session {
        let id = String(UInt64.random(in: 1...UInt64.max), radix: 16)
        var sessionLogger = logger
        sessionLogger[metadataKey: "session"] = "\(id)"
        if let peer { sessionLogger[metadataKey: "peer"] = "\(peer)" }
        let session = Session(
            id: id, hub: hub, connection: connection, configuration: configuration,
            authorization: authorization, encodingCache: encodingCache, logger: sessionLogger, counters: counters,
            authenticator: authenticator)
        session.admission = admission
        session.service = service
        return session
    }
}

/// Connects one WebSocket connection to its ``Session``: frames in, the session's
/// messages out, and the close reported to the service.
final class SessionHandler: WebSocketConnectionHandler, SessionConnection, SessionLink {
    private let connection: WebSocketConnection
    private let sessions: SessionFactory
    private let onClose: (SessionHandler) -> Void
    private(set) var session: Session?
    /// The session's waiters for room in the outbound queue, woken when it drains.
    private var outboundRoom: OutboundRoom?
    /// When the connection opened (nanoseconds since the Unix epoch).
    let openedAt: Int64
    /// The session's logger (with its id and the peer), once open.
    private var logger: Logger?

    init(connection: WebSocketConnection, sessions: SessionFactory, onClose: @escaping (SessionHandler) -> Void) {
        self.connection = connection
        self.sessions = sessions
        self.onClose = onClose
        openedAt = Hub.systemWallClock().nanoseconds
    }

    /// The client's address.
    var peer: String? { connection.peer }
    /// Payload bytes received so far.
    var bytesReceived: Int { connection.bytesReceived }
    /// Bytes written so far.
    var bytesSent: Int { connection.bytesWritten }


    func connectionDidOpen(_ connection: WebSocketConnection) {
        let (session, logger) = sessions.open(
            on: self, authorization: connection.authorization, peer: connection.peer, path: connection.requestPath)
        self.session = session
        outboundRoom = session.outboundRoom
        self.logger = logger
        session.start()
    }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        switch kind {
        case .text: session?.receive(text: payload)
        case .binary: session?.receiveBinary(bytes: payload.count)
        }
    }

    func connectionDidDrainOutbound(_ connection: WebSocketConnection) {
        outboundRoom?.drained()
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        if let logger, let session {
            sessions.close(
                session, logger: logger, openedAt: openedAt, code: code.map { Int($0.rawValue) }, reason: reason,
                peer: connection.peer, bytesReceived: connection.bytesReceived, bytesSent: connection.bytesWritten)
        }
        session = nil
        outboundRoom = nil
        onClose(self)
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

    func close(code: HubCloseCode, reason: String, discardingQueued: Bool) {
        connection.close(code: WebSocketCloseCode(code.rawValue), reason: reason, discardingQueued: discardingQueued)
    }

    func abort() {
        connection.abort()
    }

    func pauseReading() {
        connection.pauseReading()
    }

    func resumeReading() {
        connection.resumeReading()
    }
}
