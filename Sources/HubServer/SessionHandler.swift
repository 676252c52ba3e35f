import HubRegistry
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

    /// A session with a fresh id on `connection`.
    func makeSession(on connection: any SessionConnection, authorization: String?) -> Session {
        let id = String(UInt64.random(in: 1...UInt64.max), radix: 16)
        var sessionLogger = logger
        sessionLogger[metadataKey: "session"] = "\(id)"
        return Session(
            id: id, hub: hub, connection: connection, configuration: configuration,
            authorization: authorization, encodingCache: encodingCache, logger: sessionLogger)
    }
}

/// Connects one WebSocket connection to its ``Session``: frames in, the session's
/// messages out, and the close reported to the service.
final class SessionHandler: WebSocketConnectionHandler, SessionConnection {
    private let connection: WebSocketConnection
    private let sessions: SessionFactory
    private let onClose: (SessionHandler) -> Void
    private(set) var session: Session?

    init(connection: WebSocketConnection, sessions: SessionFactory, onClose: @escaping (SessionHandler) -> Void) {
        self.connection = connection
        self.sessions = sessions
        self.onClose = onClose
    }

    func connectionDidOpen(_ connection: WebSocketConnection) {
        let session = sessions.makeSession(on: self, authorization: connection.authorization)
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
}
