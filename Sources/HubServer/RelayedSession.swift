import HubLoop
import HubRegistry
import HubTransport
import HubWire
import Logging

/// The hub's side of a connection served by one of the broker's connection loops: the
/// session's connection (``SessionConnection``) and the service's record of it
/// (``SessionLink``). Its ``ConnectionRelay`` hands it the connection's events; what the
/// session sends until the hub's loop writes (at the end of a pass, or after a hold while
/// a stream's writes wait, ``WriteCoalescing``) is gathered into one ``Batch`` and handed
/// to the connection loop then, with the other connections' of that loop
/// (``LoopHandOff``): a value fanned out to many subscribers crosses to each loop once
/// per write, not once per subscriber.
///
/// Made on the connection loop when the connection is accepted (it only stores what it
/// is given), and used on the hub's loop from then on.
final class RelayedSession: SessionLink, SessionConnection, HandOffPlaceHolder {
    /// Messages of one pass, back to back in ``bytes``; ``ends`` holds where each ends.
    struct Batch: Sendable {
        var bytes: [UInt8] = []
        var ends: [Int] = []
    }

    private let relay: ConnectionRelay
    private let figures: ConnectionRelay.Figures
    /// The connection's loop as the hub's loop sees it (used there only).
    private let hubSide: LoopBound<ConnectionLoop>
    private var loop: ConnectionLoop { hubSide.value }
    private(set) var session: Session?
    /// The session's waiters for room in the outbound queue, woken when it drains.
    private var outboundRoom: OutboundRoom?
    private var logger: Logger?
    private var sessions: SessionFactory?
    private(set) var peer: String?
    private(set) var openedAt: Int64 = 0
    // Confined to the hub's loop, and never re-entered while one of these accesses is
    // open: the dynamic exclusivity check would only cost, on every delivery.
    /// Whether messages are still accepted (not once the session closed the connection).
    @exclusivity(unchecked) private var accepting = true
    /// The messages of this pass.
    @exclusivity(unchecked) private var pending = Batch()
    /// The size of the last batch handed over: the next one reserves as much.
    @exclusivity(unchecked) private var lastBatchBytes = 0
    /// The batch `next` open at the end of ``pending``: its key and its closing.
    @exclusivity(unchecked) private var open: (key: UInt64, closing: [UInt8])?
    /// The place of ``pending`` in the loop's hand-off (a close hands the messages over
    /// before it, and a later message takes a new place after it).
    @exclusivity(unchecked) var handOffPlace = HandOffPlace()
    var handOff: LoopHandOff { loop.toConnections }

    /// The session's side of `relay`'s connection, on `loop`.
    init(relay: ConnectionRelay, loop: LoopBound<ConnectionLoop>) {
        self.relay = relay
        self.figures = relay.figures
        self.hubSide = loop
    }

    // MARK: Events from the relay

    /// The connection opened: the session starts (or the connection is closed, when the
    /// service stops).
    func open(peer: String?, authorization: String?, path: String) {
        self.peer = peer
        openedAt = Hub.systemWallClock().nanoseconds
        guard let sessions = loop.adopt(self) else {
            close(code: .goingAway, reason: "server shutting down", discardingQueued: true)
            return
        }
        self.sessions = sessions
        let (session, logger) = sessions.open(on: self, authorization: authorization, peer: peer, path: path)
        self.session = session
        outboundRoom = session.outboundRoom
        self.logger = logger
        session.start()
    }

    /// A text message arrived.
    func receive(text: [UInt8]) {
        text.withUnsafeBytes { session?.receive(text: $0) }
        handled(bytes: text.count)
    }

    /// A binary message of `bytes` arrived.
    func receiveBinary(bytes: Int) {
        session?.receiveBinary(bytes: bytes)
        handled(bytes: bytes)
    }

    /// Counts a message as handled; past half the read-ahead, the relay may read again.
    private func handled(bytes: Int) {
        guard figures.handled(bytes: bytes) else { return }
        let relay = self.relay
        loop.control.post { relay.readAheadDrained() }
    }

    /// The connection's queue has drained.
    func outboundDrained() {
        outboundRoom?.drained()
    }

    /// The connection closed with `code` (none: without a close frame).
    func closed(code: Int?, reason: String) {
        accepting = false
        if let logger, let session, let sessions {
            sessions.close(
                session, logger: logger, openedAt: openedAt, code: code, reason: reason, peer: peer,
                bytesReceived: bytesReceived, bytesSent: bytesSent)
        }
        session = nil
        outboundRoom = nil
        pending = Batch()
        open = nil
        loop.forget(self)
    }

    // MARK: SessionLink

    var bytesReceived: Int { figures.bytesReceived.load(ordering: .relaxed) }
    var bytesSent: Int { figures.bytesWritten.load(ordering: .relaxed) }
    var writeCalls: Int { figures.writeCalls.load(ordering: .relaxed) }
    var messagesWritten: Int { figures.messagesWritten.load(ordering: .relaxed) }

    // MARK: SessionConnection

    var queuedBytes: Int {
        pending.bytes.count + figures.bytesInTransit.load(ordering: .relaxed) + figures.queuedBytes.load(ordering: .relaxed)
    }

    func sendMessage(_ build: (inout [UInt8]) -> Void) -> Bool {
        guard accepting else { return false }
        endOpenMessage()
        reserve()
        build(&pending.bytes)
        pending.ends.append(pending.bytes.count)
        didQueueMessage()
        return true
    }

    func sendMessage(prefix: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, suffix: UnsafeRawBufferPointer) -> Bool {
        guard accepting else { return false }
        endOpenMessage()
        reserve()
        pending.bytes.append(contentsOf: prefix)
        pending.bytes.append(contentsOf: body)
        pending.bytes.append(contentsOf: suffix)
        pending.ends.append(pending.bytes.count)
        didQueueMessage()
        return true
    }

    func sendBatched(key: UInt64, closing: [UInt8], _ append: (inout [UInt8], Bool) -> Void) -> Bool {
        guard accepting else { return false }
        if let open, open.key == key {
            append(&pending.bytes, false)
        } else {
            endOpenMessage()
            reserve()
            open = (key, closing)
            append(&pending.bytes, true)
        }
        didQueueMessage()
        return true
    }

    func close(code: HubCloseCode, reason: String, discardingQueued: Bool) {
        accepting = false
        let code = WebSocketCloseCode(code.rawValue)
        let relay = self.relay
        handAfterPending { relay.close(code: code, reason: reason, discardingQueued: discardingQueued) }
    }

    func abort() {
        accepting = false
        let relay = self.relay
        handAfterPending { relay.abort() }
    }

    func pauseReading() {
        let relay = self.relay
        loop.control.post { relay.pauseReading() }
    }

    func resumeReading() {
        let relay = self.relay
        loop.control.post { relay.resumeReading() }
    }

    // MARK: Handing over

    /// Gives a new pass's batch the size of the last one at once.
    @inline(__always)
    private func reserve() {
        if pending.bytes.capacity < lastBatchBytes { pending.bytes.reserveCapacity(lastBatchBytes) }
    }

    /// Ends the batch `next` open at the end of ``pending`` with its closing.
    private func endOpenMessage() {
        guard let open else { return }
        pending.bytes.append(contentsOf: open.closing)
        pending.ends.append(pending.bytes.count)
        self.open = nil
    }

    /// How large ``pending`` grows before it goes to the connection loop at once, not at
    /// the hub loop's next write: a pass that handles many large values (a batch of a
    /// publisher's messages) would otherwise hold them all back. It also bounds a batch
    /// `next` (as the connection's own coalescing does).
    static let eagerHandOverBytes = 64 << 10

    /// Counts a message queued in ``pending`` and makes sure it goes to the connection
    /// loop at that loop's next write, or now when ``pending`` has grown large.
    @inline(__always)
    private func didQueueMessage() {
        didQueue(
            pendingBytes: pending.bytes.count, eagerBytes: RelayedSession.eagerHandOverBytes,
            promptBytes: loop.promptWriteSize)
    }

    /// The work that writes ``pending`` on the connection loop.
    func takePendingWork() -> (() -> Void)? {
        endOpenMessage()
        guard !pending.ends.isEmpty else { return nil }
        let batch = pending
        pending = Batch()
        lastBatchBytes = min(batch.bytes.count, RelayedSession.eagerHandOverBytes)
        figures.bytesInTransit.add(batch.bytes.count, ordering: .relaxed)
        let relay = self.relay
        return { relay.write(batch) }
    }
}
