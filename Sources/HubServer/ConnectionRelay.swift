import HubTransport
import Synchronization

/// A connection served by one of the broker's connection loops, whose session lives on
/// the hub's loop (``RelayedSession``): it hands the connection's events (open, each
/// message, drained, close) to the hub's loop, and applies what the session sends there
/// (message batches, close, flow control) to the connection.
///
/// Confined to its connection loop. It holds its ``RelayedSession`` only to pass it in
/// the work it hands over, never to use it, until the close has been handed over.
final class ConnectionRelay: WebSocketConnectionHandler {
    /// The figures of the connection, written by its loop and read by the hub's (any thread).
    final class Figures: Sendable {
        /// Bytes queued on the connection loop and not yet handed to the socket.
        let queuedBytes = Atomic<Int>(0)
        /// Bytes of message batches handed to the connection loop and not yet queued there.
        let bytesInTransit = Atomic<Int>(0)
        /// Payload bytes received.
        let bytesReceived = Atomic<Int>(0)
        /// Bytes written.
        let bytesWritten = Atomic<Int>(0)
        /// Raw writes.
        let writeCalls = Atomic<Int>(0)
        /// Messages written.
        let messagesWritten = Atomic<Int>(0)
        /// Messages and bytes handed to the hub's loop and not yet handled there.
        let readAheadMessages = Atomic<Int>(0)
        let readAheadBytes = Atomic<Int>(0)

        /// Whether the connection loop has read as far ahead of the hub's as allowed.
        var isReadAheadFull: Bool {
            readAheadMessages.load(ordering: .relaxed) >= ConnectionRelay.readAhead.messages
                || readAheadBytes.load(ordering: .relaxed) >= ConnectionRelay.readAhead.bytes
        }

        /// Counts a message of `bytes` handed to the hub's loop.
        func handedOver(bytes: Int) {
            readAheadMessages.add(1, ordering: .relaxed)
            readAheadBytes.add(bytes, ordering: .relaxed)
        }

        /// Counts a message of `bytes` the hub's loop has handled; returns whether the read
        /// ahead fell to half its bound (the connection loop may read again).
        func handled(bytes: Int) -> Bool {
            let messages = readAheadMessages.subtract(1, ordering: .relaxed).newValue
            let left = readAheadBytes.subtract(bytes, ordering: .relaxed).newValue
            let halfMessages = ConnectionRelay.readAhead.messages / 2, halfBytes = ConnectionRelay.readAhead.bytes / 2
            return messages == halfMessages || (left <= halfBytes && left + bytes > halfBytes)
        }
    }

    /// How far a connection loop reads ahead of the hub's loop for one connection:
    /// messages and bytes handed over and not yet handled there. At the bound the
    /// relay stops reading the socket until the hub's loop has handled half, so that
    /// a fast client costs bounded memory, and a session that slows its publisher
    /// (``SessionConnection/pauseReading()``) sees few of its messages after.
    static let readAhead = (messages: 16, bytes: 128 << 10)

    /// The connection's figures, for its session's side.
    let figures = Figures()
    private let connection: WebSocketConnection
    private let toHub: LoopHandOff
    /// The session's side, until the close has been handed over.
    private var session: RelayedSession?
    /// Whether the session paused reading (a publisher slowed down).
    private var sessionPausedReading = false
    /// Whether reading is paused, for the session or the read-ahead bound.
    private var readingPaused = false

    /// A relay of `connection`, which hands its events over through `toHub`.
    init(connection: WebSocketConnection, toHub: LoopHandOff) {
        self.connection = connection
        self.toHub = toHub
    }

    /// Pairs the relay with its session's side (before the connection opens).
    func attach(_ session: RelayedSession) {
        self.session = session
    }

    // MARK: Events, handed to the hub's loop

    func connectionDidOpen(_ connection: WebSocketConnection) {
        guard let session else { return }
        let peer = connection.peer, authorization = connection.authorization, path = connection.requestPath
        toHub.post { session.open(peer: peer, authorization: authorization, path: path) }
    }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        guard let session else { return }
        figures.bytesReceived.store(connection.bytesReceived, ordering: .relaxed)
        switch kind {
        case .text:
            let text = [UInt8](payload)
            toHub.post { session.receive(text: text) }
        case .binary:
            let count = payload.count
            toHub.post { session.receiveBinary(bytes: count) }
        }
        figures.handedOver(bytes: payload.count)
        if figures.isReadAheadFull { updateReading() }
    }

    func connectionDidDrainOutbound(_ connection: WebSocketConnection) {
        refreshFigures()
        guard let session else { return }
        toHub.post { session.outboundDrained() }
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        refreshFigures()
        guard let session else { return }
        self.session = nil
        let code = code.map { Int($0.rawValue) }
        toHub.post { session.closed(code: code, reason: reason) }
    }

    // MARK: Work from the hub's loop

    /// Queues the messages of `batch` (what the session sent until the hub's loop wrote),
    /// to be written at the end of this pass: the hub's loop held them back already.
    func write(_ batch: RelayedSession.Batch) {
        batch.bytes.withUnsafeBytes { bytes in
            var start = 0
            for end in batch.ends {
                connection.send(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), kind: .text)
                start = end
            }
        }
        connection.eventLoop.writeAtEndOfPass()
        // Queued first, then out of transit: the hub's loop may count the batch twice
        // for a moment, never not at all.
        refreshFigures()
        figures.bytesInTransit.subtract(batch.bytes.count, ordering: .relaxed)
    }

    /// Closes the connection (see ``SessionConnection/close(code:reason:discardingQueued:)``).
    func close(code: WebSocketCloseCode, reason: String, discardingQueued: Bool) {
        connection.close(code: code, reason: reason, discardingQueued: discardingQueued)
        refreshFigures()
    }

    /// Drops the connection without a close handshake.
    func abort() {
        connection.abort()
        refreshFigures()
    }

    /// Stops reading the client's messages.
    func pauseReading() {
        sessionPausedReading = true
        updateReading()
    }

    /// Reads the client's messages again (unless the read-ahead bound holds them).
    func resumeReading() {
        sessionPausedReading = false
        updateReading()
    }

    /// The hub's loop has caught up: reads again unless the session paused reading.
    func readAheadDrained() {
        updateReading()
    }

    private func updateReading() {
        let pause = sessionPausedReading || figures.isReadAheadFull
        guard pause != readingPaused else { return }
        readingPaused = pause
        if pause { connection.pauseReading() } else { connection.resumeReading() }
    }

    private func refreshFigures() {
        figures.bytesReceived.store(connection.bytesReceived, ordering: .relaxed)
        figures.queuedBytes.store(connection.queuedBytes, ordering: .relaxed)
        figures.bytesWritten.store(connection.bytesWritten, ordering: .relaxed)
        figures.writeCalls.store(connection.writeCalls, ordering: .relaxed)
        figures.messagesWritten.store(connection.messagesWritten, ordering: .relaxed)
    }
}
