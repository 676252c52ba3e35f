import CWebsockets
import HubValue
import Logging
import Synchronization

/// One WebSocket connection (server- or client-side), confined to its event loop's thread.
///
/// The connection performs the effects that value-type state machines decide:
/// ``CloseHandshake`` (its life and close), ``OutboundQueue`` (what to write, in which
/// shape: preframed small messages, batches, fragments), ``InboundAssembler``
/// (reassembly of fragments into messages, bounded by ``Limits/maximumMessageSize``;
/// beyond it the connection is closed with 1009) and, server side,
/// ``WebSocketFrameParser`` (the client's frames, read from the raw socket).
///
/// A server connection runs on a socket in lws's raw-skt role (``ServerSocket``): it
/// parses frames, unmasks, answers pings, frames every write and runs the close
/// handshake itself. A client connection runs in lws's ws client role, which frames and
/// parses for it.
public final class WebSocketConnection {
    /// Which side of the connection this object is.
    public enum Role: Sendable, Hashable {
        /// Accepted by a ``WebSocketServer``.
        case server
        /// Opened by a ``WebSocketClient``.
        case client
    }

    /// Where the connection is in its life.
    public enum State: Sendable, Hashable {
        /// A client connection whose handshake has not finished.
        case connecting
        /// Open: messages flow both ways.
        case open
        /// A close was requested or received; the close handshake is under way.
        case closing
        /// Closed (or never opened).
        case closed
    }

    /// The loop the connection lives on.
    public let eventLoop: EventLoop
    /// Server- or client-side.
    public let role: Role
    /// A process-unique number, for logs.
    public let id: UInt64
    /// The request path of the upgrade request (for example `/`).
    public let requestPath: String
    /// The `Authorization` header of the upgrade request, if any (sent by a client,
    /// received by a server).
    public let authorization: String?
    /// The negotiated subprotocol (for example `hub.v1`), or `nil` when the client offered
    /// none. Known once the connection is open.
    public internal(set) var subprotocol: String?
    /// The limits this connection enforces.
    public let limits: Limits
    // @exclusivity(unchecked) on the hot fields: the connection is confined to its loop
    // and no access to one of them is open while another starts (the state machines'
    // transitions return before the connection calls out), so the dynamic check (a
    // runtime call per access) would only cost.

    /// Receives the connection's events. Held strongly until the close event.
    @exclusivity(unchecked) public var handler: (any WebSocketConnectionHandler)?
    /// Whether reading is paused with ``pauseReading()``.
    @exclusivity(unchecked) public private(set) var isReadingPaused = false
    /// `lws_write` calls made so far (fewer than messages when small ones are batched).
    @exclusivity(unchecked) public private(set) var writeCalls = 0
    /// Bytes handed to the socket so far (frame headers included), counted per write.
    @exclusivity(unchecked) public private(set) var bytesWritten = 0
    /// Bytes of message payload received so far, counted per lws chunk.
    @exclusivity(unchecked) public private(set) var bytesReceived = 0
    /// The peer's address (a server connection's client), for logs; `nil` when unknown.
    public internal(set) var peer: String?

    /// Where the connection is in its life.
    public var state: State { handshake.state }
    /// Bytes queued and not yet handed to the socket (payloads, plus the frame headers of
    /// small messages, which are framed when queued). The server bounds this.
    public var queuedBytes: Int { outbound.queuedBytes }
    /// Messages completely handed to the socket so far.
    public var messagesWritten: Int { outbound.messagesWritten }
    /// The number of frames waiting in the outbound queue.
    public var queuedFrameCount: Int { outbound.count }

    @exclusivity(unchecked) var wsi: OpaquePointer?
    /// Counted in its server's open connections.
    var isCounted = false
    /// Refused after accept (too many connections): no events reach a handler.
    @exclusivity(unchecked) var isRefused = false
    /// Whether a client connection was opened with TLS (for its error messages).
    var usesTLS = false
    /// A client connection's connect strings and per-session slot, alive until lws has
    /// freed the connection.
    private(set) lazy var clientArena = ContextArena()

    private let logger: Logger
    @exclusivity(unchecked) private var handshake = CloseHandshake()
    @exclusivity(unchecked) private var outbound: OutboundQueue
    @exclusivity(unchecked) private var inbound: InboundAssembler
    /// Whether complete text messages are checked for UTF-8 before delivery.
    private let validatesText: Bool
    @exclusivity(unchecked) private var masking = WebSocketMasking()
    @exclusivity(unchecked) private var writableRequested = false
    /// Whether the rest of the queue waits for a writable callback (the socket did not
    /// take everything, or a close is due).
    var isAwaitingWritable: Bool { writableRequested }
    @exclusivity(unchecked) private var flushScheduled = false
    /// The keepalive its server's sweep advances (server connections with a ping interval).
    @exclusivity(unchecked) var keepalive: Keepalive?

    // The raw socket's side (server connections).
    /// Whether this side frames, parses and closes itself (a server connection).
    private let framesItself: Bool
    /// The socket the connection runs on (server connections).
    weak var socket: ServerSocket?
    @exclusivity(unchecked) private var frames: WebSocketFrameParser
    /// The payload of the last ping not answered yet (one pong answers a flood).
    @exclusivity(unchecked) private var pendingPong: [UInt8]?
    /// Bytes read while reading was paused, parsed once it resumes.
    @exclusivity(unchecked) private var pendingInput: [UInt8] = []
    /// Whether this side's close frame went out (or is decided: ``closeAnswer``).
    @exclusivity(unchecked) private var closeFrameSent = false
    /// The code of the close frame that answers the peer's, written when the socket
    /// closes.
    @exclusivity(unchecked) private var closeAnswer: WebSocketCloseCode?
    /// Whether the connection failed (a close frame for a broken rule): input is dropped.
    @exclusivity(unchecked) private var hasFailed = false

    init(
        eventLoop: EventLoop, role: Role, requestPath: String, authorization: String?, limits: Limits,
        logger: Logger
    ) {
        self.eventLoop = eventLoop
        self.role = role
        self.id = WebSocketConnection.counter.next()
        self.requestPath = requestPath
        self.authorization = authorization
        self.limits = limits
        self.logger = logger
        self.outbound = OutboundQueue(limits: limits, role: role)
        self.inbound = InboundAssembler(maximumMessageSize: limits.maximumMessageSize)
        self.framesItself = role == .server
        self.frames = WebSocketFrameParser(maximumMessageSize: limits.maximumMessageSize)
        self.validatesText = eventLoop.configuration.validatesUTF8
    }

    // MARK: - Sending

    /// Queues one message with a copy of `payload`. Returns `false` (and drops it) when the
    /// connection is closing or closed.
    @discardableResult
    public func send(_ payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) -> Bool {
        send(prefix: UnsafeRawBufferPointer(start: nil, count: 0), body: payload,
             suffix: UnsafeRawBufferPointer(start: nil, count: 0), kind: kind)
    }

    /// Queues one message with a copy of `bytes`.
    @discardableResult
    public func send<Bytes: Collection>(_ bytes: Bytes, kind: WebSocketMessageKind) -> Bool where Bytes.Element == UInt8 {
        if let sent = bytes.withContiguousStorageIfAvailable({ send(UnsafeRawBufferPointer($0), kind: kind) }) {
            return sent
        }
        return sendFrame(kind: kind) { storage in storage.append(contentsOf: bytes) }
    }

    /// Queues one text message.
    @discardableResult
    public func send(text: String) -> Bool {
        var text = text
        return text.withUTF8 { send(UnsafeRawBufferPointer($0), kind: .text) }
    }

    /// Queues one message made of `prefix`, `body` and `suffix` (for example a per-
    /// subscription envelope around a value encoded once for every subscriber).
    ///
    /// A small message is appended, header and all (masked on the client side, with a key
    /// from the system's strong random source), to the tail of a preframed queue entry:
    /// no allocation of its own, one `lws_write` for many.
    @discardableResult
    public func send(
        prefix: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, suffix: UnsafeRawBufferPointer,
        kind: WebSocketMessageKind
    ) -> Bool {
        eventLoop.preconditionInEventLoop()
        guard handshake.acceptsOutbound else { return false }
        outbound.append(
            kind: kind, prefix: prefix, body: body, suffix: suffix,
            maskingKey: { masking.nextKey() }, newBuffer: { eventLoop.buffers.take() })
        didQueueMessage()
        return true
    }

    /// Queues one message whose payload `build` appends to `storage` (a recycled buffer
    /// that already holds the lws headroom: only append to it).
    @discardableResult
    public func sendFrame(kind: WebSocketMessageKind, _ build: (inout [UInt8]) -> Void) -> Bool {
        eventLoop.preconditionInEventLoop()
        guard handshake.acceptsOutbound else { return false }
        var frame = OutboundFrame(buffer: eventLoop.buffers.take(), kind: kind)
        build(&frame.storage)
        outbound.append(frame)
        didQueueMessage()
        return true
    }

    /// Appends one element to the message at the tail of the queue when that message is
    /// open under `key` (same kind, not yet being written, below the coalescing size
    /// limit); otherwise queues a new message under `key`, ending with `closing`.
    ///
    /// `append` receives the frame's storage (only append to it) and whether this element
    /// opens the message, so that it can write an opening (for example `{"op":"next",
    /// "id":1,"values":[`) or a separator. `closing` (for example `]}`) is added when
    /// the message is sealed, just before it is written. Many small messages become one
    /// `lws_write`.
    @discardableResult
    public func sendCoalescing(
        key: UInt64, kind: WebSocketMessageKind, closing: [UInt8] = [],
        _ append: (inout [UInt8], _ opensMessage: Bool) -> Void
    ) -> Bool {
        eventLoop.preconditionInEventLoop()
        guard handshake.acceptsOutbound else { return false }
        let queuedNew = outbound.appendCoalescing(
            key: key, kind: kind, closing: closing, newBuffer: { eventLoop.buffers.take() }, append)
        didQueueMessage(schedulesFlush: queuedNew)
        return true
    }

    // MARK: - Closing and flow control

    /// Closes the connection with `code` and `reason` (at most 123 bytes of UTF-8).
    ///
    /// Queued messages are written first unless `discardingQueued` is set (for example
    /// for a slow consumer). Messages sent afterwards are dropped. Calling it again does
    /// nothing, except that a call discarding the queue escalates a pending close that
    /// was waiting for the queue to drain (its code and reason replace the first ones).
    public func close(code: WebSocketCloseCode = .normal, reason: String = "", discardingQueued: Bool = false) {
        eventLoop.preconditionInEventLoop()
        switch handshake.close(code: code, reason: reason, discardingQueued: discardingQueued) {
        case .none:
            break
        case .flush(let discarding):
            if discarding { outbound.dropQueuedExceptInProgress() }
            requestWritable()
        }
    }

    /// Drops the connection at once, without a close handshake (the peer sees the TCP
    /// connection end). The close event follows with no code. For a peer that does not
    /// read even its close frame. A client connection still connecting is dropped as
    /// soon as its handshake completes.
    public func abort() {
        eventLoop.preconditionInEventLoop()
        switch handshake.abort() {
        case .none:
            break
        case .discardQueue:
            outbound.dropQueuedExceptInProgress()
        case .discardQueueAndKill:
            outbound.dropQueuedExceptInProgress()
            if let wsi {
                cws_kill_async(wsi)
                eventLoop.requestLibWebSocketsService()
            }
        }
    }

    /// Stops reading from the socket (TCP back pressure reaches the peer).
    public func pauseReading() {
        eventLoop.preconditionInEventLoop()
        guard !isReadingPaused else { return }
        isReadingPaused = true
        if let wsi { lws_rx_flow_control(wsi, 0) }
    }

    /// Resumes reading after ``pauseReading()``.
    public func resumeReading() {
        eventLoop.preconditionInEventLoop()
        guard isReadingPaused else { return }
        isReadingPaused = false
        guard let wsi else { return }
        if framesItself, !pendingInput.isEmpty {
            // What was read before the pause is parsed first, outside lws's callbacks.
            eventLoop.executeSoon { [weak self] in self?.parsePendingInput() }
            return
        }
        lws_rx_flow_control(wsi, 1)
        if framesItself { return }
        // What lws read before the pause waits in its buffer list, which it services only
        // on a pass of its loop: wake the loop, or those messages would wait for the
        // peer's next bytes (forever, when it sent everything before the pause).
        lws_cancel_service_pt(wsi)
    }

    private func requestWritable() {
        guard !writableRequested, handshake.isEstablished, let wsi else { return }
        writableRequested = true
        lws_callback_on_writable(wsi)
    }

    /// Counts a queued message for the loop's write coalescing and schedules the write;
    /// a queue that waits for it and holds ``Limits/promptWriteSize`` bytes is written at
    /// the end of the pass.
    @inline(__always)
    private func didQueueMessage(schedulesFlush: Bool = true) {
        eventLoop.noteMessageQueued()
        if schedulesFlush { scheduleFlush() }
        if flushScheduled, outbound.queuedBytes >= limits.promptWriteSize { eventLoop.writeAtEndOfPass() }
    }

    /// Asks the loop to write the queue at the end of its service pass (see ``flush()``),
    /// unless a write is already due.
    private func scheduleFlush() {
        guard !flushScheduled, !writableRequested, handshake.isEstablished, wsi != nil else { return }
        flushScheduled = true
        eventLoop.scheduleFlush(self)
    }

    // MARK: - Events from the callback dispatcher

    /// The handshake finished on `wsi`.
    func didEstablish(_ wsi: OpaquePointer) {
        // Every later lws call on `wsi` comes from a method that checks it runs on this
        // connection's loop: that loop must own the wsi's context.
        assert(EventLoop.owning(wsi) === eventLoop, "a connection was given a wsi of another event loop's context")
        self.wsi = wsi
        switch handshake.established() {
        case .kill:
            cws_kill_async(wsi)
            eventLoop.requestLibWebSocketsService()
        case .open(let closePending):
            if isReadingPaused { lws_rx_flow_control(wsi, 0) }
            if closePending || !outbound.isEmpty { requestWritable() }
        }
    }

    /// Tells the handler the connection is open (after the server's delegate saw it).
    func notifyOpen() {
        guard handshake.isEstablished else { return }
        handler?.connectionDidOpen(self)
    }

    /// One chunk of inbound payload. Returns nonzero to close.
    func handleReceive(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard self.wsi != nil else { return -1 }
        let chunk = UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length)
        bytesReceived &+= chunk.count
        keepalive?.peerWasHeard()
        let outcome = inbound.receive(
            chunk, isBinary: lws_frame_is_binary(wsi) != 0,
            completesMessage: lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0)
        switch outcome {
        case .awaitMore:
            break
        case .deliverChunk:
            // The whole message is in this chunk: hand lws's buffer over without a copy.
            guard isWellFormed(chunk) else { return refuseMalformedText(wsi) }
            deliver(chunk)
        case .deliverAssembled:
            guard deliverAssembled() else { return refuseMalformedText(wsi) }
        case .tooLarge:
            sendCloseFrame(wsi, handshake.closeNow(code: .messageTooBig, reason: "message too big"))
            return -1
        }
        return 0
    }

    // MARK: - The raw socket (server connections)

    /// Bytes read from the socket after the upgrade. Returns nonzero to close it now.
    func receive(raw buffer: UnsafeMutableRawBufferPointer) -> Int32 {
        guard let wsi, !hasFailed else { return 0 }
        keepalive?.peerWasHeard()
        if isReadingPaused || !pendingInput.isEmpty {
            pendingInput.append(contentsOf: buffer)
            return 0
        }
        return parseFrames(buffer, wsi)
    }

    /// Parses the frames in `buffer` (unmasking them in place) and acts on them, until
    /// the bytes run out, reading is paused (the rest waits), or the connection ends.
    private func parseFrames(_ buffer: UnsafeMutableRawBufferPointer, _ wsi: OpaquePointer) -> Int32 {
        var offset = 0
        while true {
            if isReadingPaused {
                if offset < buffer.count { pendingInput.append(contentsOf: buffer[offset...]) }
                return 0
            }
            switch frames.next(buffer, &offset) {
            case .needMore:
                return 0
            case .data(let start, let count, let kind, let endsMessage):
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[start..<(start + count)])
                bytesReceived &+= count
                switch inbound.receive(chunk, isBinary: kind == .binary, completesMessage: endsMessage) {
                case .awaitMore:
                    break
                case .deliverChunk:
                    guard isWellFormed(chunk) else {
                        fail(.invalidPayload, "text message is not UTF-8")
                        return 0
                    }
                    deliver(chunk)
                case .deliverAssembled:
                    guard deliverAssembled() else {
                        fail(.invalidPayload, "text message is not UTF-8")
                        return 0
                    }
                case .tooLarge:
                    fail(.messageTooBig, "message too big")
                    return 0
                }
            case .control(let opcode, let payload):
                switch opcode {
                case 0x9:
                    // A pong answers the latest ping (RFC 6455 §5.5.3): a flood costs one.
                    pendingPong = payload
                    scheduleControlWrite()
                case 0x8:
                    return receivedClose(payload, wsi)
                default:
                    break  // a pong: the peer was heard
                }
            case .failure(let code, let reason):
                fail(code, reason)
                return 0
            }
            if hasFailed || handshake.isAborting || self.wsi == nil { return 0 }
        }
    }

    /// Parses what was read while reading was paused (after ``resumeReading()``).
    private func parsePendingInput() {
        guard !isReadingPaused, let wsi else { return }
        var input: [UInt8] = []
        swap(&input, &pendingInput)
        let result = input.withUnsafeMutableBytes { parseFrames($0, wsi) }
        if result != 0 {
            cws_kill_async(wsi)
            eventLoop.requestLibWebSocketsService()
            return
        }
        if !isReadingPaused, self.wsi != nil { lws_rx_flow_control(wsi, 1) }
    }

    /// The peer's close frame (`payload`: big-endian code, then the reason). A valid one is
    /// answered with the same code (or acknowledges this side's close) and the socket
    /// closes (returns -1); one that breaks RFC 6455 §5.5.1/§7.4 is answered with 1002,
    /// a reason that is not UTF-8 with 1007.
    private func receivedClose(_ payload: [UInt8], _ wsi: OpaquePointer) -> Int32 {
        frames.stop()
        switch CloseFramePayload.parse(payload) {
        case .invalid(let code, let reason):
            logger.debug("invalid close frame from the peer", metadata: ["reason": "\(reason)"])
            fail(code, reason)
            return 0
        case .valid(let code, let reason):
            handshake.peerClosed(code: code, reason: reason)
            guard let socket else {
                if !closeFrameSent { writeCloseFrame(wsi, code: code, reason: "") }
                return -1
            }
            if !closeFrameSent {
                // The answer echoes the code; what was queued is dropped (the peer reads no
                // more). It is written just before the socket closes, among the few its
                // loop closes a pass (``WebSocketServer/closeSoon(_:)``), not in this
                // callback: when thousands of peers close together, one pass reads
                // thousands of close frames, and a write each (through TLS, an
                // encryption each) would make that pass as long.
                outbound.removeAll()
                pendingPong = nil
                closeFrameSent = true
                closeAnswer = code
            }
            socket.closeAfterHandshake()
            return 0
        }
    }

    /// Writes the answer to the peer's close frame, deferred until its socket closes
    /// (``receivedClose(_:_:)``).
    func writeDeferredCloseAnswer() {
        guard let code = closeAnswer, let wsi else { return }
        closeAnswer = nil
        writeCloseFrame(wsi, code: code, reason: "")
    }

    /// Fails the connection (RFC 6455 §7.1.7): the close frame with `code` goes out
    /// before anything still queued, nothing more is read or delivered, and the socket
    /// closes once the peer has seen the frame (``ServerSocket/beginLingering()``).
    private func fail(_ code: WebSocketCloseCode, _ reason: String) {
        guard !hasFailed, let wsi else { return }
        hasFailed = true
        frames.stop()
        logger.debug("closing a connection that broke RFC 6455", metadata: [
            "connection": "\(id)", "peer": "\(peer ?? "-")", "code": "\(code.rawValue)", "reason": "\(reason)",
        ])
        _ = handshake.closeNow(code: code, reason: reason)
        outbound.removeAll()
        pendingPong = nil
        inbound.reset()
        if !closeFrameSent { writeCloseFrame(wsi, code: code, reason: reason) }
        socket?.connectionLingers()
    }

    /// Writes a close frame carrying `code` (none when `nil`) and `reason` (at most 123
    /// bytes of UTF-8, cut at a scalar boundary).
    private func writeCloseFrame(_ wsi: OpaquePointer, code: WebSocketCloseCode?, reason: String) {
        closeFrameSent = true
        var frame: [UInt8] = [0x88, 0]
        if let code {
            frame.append(UInt8(code.rawValue >> 8))
            frame.append(UInt8(code.rawValue & 0xFF))
            frame.append(contentsOf: CloseFramePayload.truncatedReason(reason))
        }
        frame[1] = UInt8(frame.count - 2)
        _ = writeRaw(wsi, frame)
    }

    /// Writes the pong that answers the latest ping, if one is due.
    private func writePendingPong(_ wsi: OpaquePointer) -> Bool {
        guard let payload = pendingPong else { return true }
        pendingPong = nil
        return writeRaw(wsi, [0x8A, UInt8(payload.count)] + payload)
    }

    /// Hands `bytes` to lws as they are; `false` when the socket failed.
    private func writeRaw(_ wsi: OpaquePointer, _ bytes: [UInt8]) -> Bool {
        var bytes = bytes
        let written = bytes.withUnsafeMutableBufferPointer { cws_write(wsi, $0.baseAddress, $0.count, cws_write_raw) }
        writeCalls += 1
        bytesWritten &+= bytes.count
        return written >= bytes.count
    }

    /// Has the pending pong written at the end of the pass (or the next writable callback).
    private func scheduleControlWrite() {
        if writableRequested { return }
        guard !flushScheduled, handshake.isEstablished, wsi != nil else { return }
        flushScheduled = true
        eventLoop.scheduleFlush(self)
    }

    /// The peer answered a ping.
    func handlePong() {
        keepalive?.peerWasHeard()
    }

    /// A second of the server's keepalive sweep: pings a silent peer, hangs up on one
    /// silent for the idle timeout.
    func keepaliveSecondPassed() {
        guard handshake.isEstablished, handshake.pending == nil, let action = keepalive?.secondPassed() else { return }
        switch action {
        case .none:
            break
        case .ping:
            outbound.appendPing(
                payload: Keepalive.pingPayload, maskingKey: { masking.nextKey() }, newBuffer: { eventLoop.buffers.take() })
            scheduleFlush()
        case .hangUp:
            logger.info("no answer to pings: hanging up", metadata: [
                "connection": "\(id)", "peer": "\(peer ?? "-")", "silentSeconds": "\(keepalive?.silentSeconds ?? 0)",
            ])
            abort()
        }
    }

    /// Whether a complete inbound message may be delivered: binary, or text that is
    /// well-formed UTF-8 (when the loop checks it: ``EventLoop/Configuration/validatesUTF8``).
    /// Delivers the message the assembler completed and recycles its buffer; false,
    /// delivering nothing, when it is text that is not UTF-8.
    private func deliverAssembled() -> Bool {
        var message = inbound.takeMessage()
        let wellFormed = message.withUnsafeBytes { bytes in
            guard isWellFormed(bytes) else { return false }
            deliver(bytes)
            return true
        }
        inbound.recycle(&message)
        return wellFormed
    }

    private func isWellFormed(_ message: UnsafeRawBufferPointer) -> Bool {
        inbound.kind != .text || !validatesText || UTF8Validation.isValid(message)
    }

    /// Closes with 1007 (RFC 6455 §8.1) after a text message that is not UTF-8.
    private func refuseMalformedText(_ wsi: OpaquePointer) -> Int32 {
        logger.debug("a text message that is not UTF-8: closing with 1007", metadata: [
            "connection": "\(id)", "peer": "\(peer ?? "-")",
        ])
        sendCloseFrame(wsi, handshake.closeNow(code: .invalidPayload, reason: "text message is not UTF-8"))
        return -1
    }

    private func deliver(_ payload: UnsafeRawBufferPointer) {
        // Messages that arrive while the close handshake runs are still delivered.
        guard handshake.isEstablished, !isRefused, let handler else { return }
        handler.connection(self, didReceive: payload, kind: inbound.kind)
    }

    /// The socket can take one more write. Returns nonzero to close.
    func handleWritable() -> Int32 {
        writableRequested = false
        guard let wsi else { return -1 }
        if framesItself {
            // Failed, or waiting for the peer's close: nothing more to write.
            if hasFailed || closeFrameSent { return handshake.isAborting ? -1 : 0 }
        }
        let action = handshake.writable(queueIsEmpty: outbound.isEmpty)
        guard action == .write else { return closeWith(wsi, action) }
        if framesItself, !writePendingPong(wsi) { return -1 }
        // Callbacks may come unrequested (or after lws sent the rest of our last write).
        if outbound.isEmpty {
            handler?.connectionDidDrainOutbound(self)
            return 0
        }
        guard writeNextStep(wsi) else { return -1 }
        // The queue went out whole and a close waits for it: the close frame follows in
        // the same callback (a peer that reacts to the last messages by closing itself
        // would otherwise often close first, with its own code).
        if outbound.isEmpty, handshake.pending != nil, lws_partial_buffered(wsi) == 0 {
            let next = handshake.writable(queueIsEmpty: true)
            if next != .write { return closeWith(wsi, next) }
        }
        // lws asks for a writable callback itself when it kept part of the write: say so,
        // so that nothing newer is written before that part.
        if !outbound.isEmpty || handshake.pending != nil || lws_partial_buffered(wsi) != 0 {
            requestWritable()
        } else {
            handler?.connectionDidDrainOutbound(self)
        }
        return 0
    }

    /// Performs a close `action` from a writable callback; returns what lws must be told.
    /// A client connection has lws send the close frame and close (nonzero). A server
    /// connection writes its close frame and waits for the peer's (closing the socket at
    /// it, or at the deadline), or closes at once when aborting.
    private func closeWith(_ wsi: OpaquePointer, _ action: CloseHandshake.WritableAction) -> Int32 {
        guard framesItself else {
            sendCloseFrame(wsi, action)
            return -1
        }
        guard case .sendClose(let code, let reason) = action else { return -1 }
        if !closeFrameSent { writeCloseFrame(wsi, code: code, reason: reason) }
        socket?.setDeadline(seconds: ServerSocket.closeAcknowledgementSeconds)
        return 0
    }

    /// Writes what is queued now, outside a writable callback: the loop calls it at the end
    /// of a service pass (or after a few passes of input, see ``EventLoop/Configuration/
    /// writeCoalescingDelay``), so that every message queued meanwhile leaves in one write,
    /// without a round trip through `poll` for `POLLOUT`. Only when the socket does not
    /// take everything (lws then keeps the rest and asks for `POLLOUT` itself), or a close
    /// is due, does the rest wait for a writable callback.
    func flush() {
        flushScheduled = false
        guard let wsi, !writableRequested, handshake.isEstablished else { return }
        if framesItself {
            guard !hasFailed, !closeFrameSent else { return }
            if pendingPong != nil, lws_partial_buffered(wsi) == 0, !writePendingPong(wsi) {
                abort()
                return
            }
        }
        // A close is due after the queue: a writable callback writes both (see handleWritable).
        if handshake.pending != nil {
            requestWritable()
            return
        }
        // lws still holds part of an earlier write: it must go first, from a writable callback.
        if lws_partial_buffered(wsi) != 0 {
            requestWritable()
            return
        }
        var steps = 0
        while handshake.writesQueued(queueIsEmpty: outbound.isEmpty) {
            guard writeNextStep(wsi) else {
                // lws cannot take the write (the socket failed): close at its next pass.
                abort()
                return
            }
            steps += 1
            if lws_partial_buffered(wsi) != 0 || steps == WebSocketConnection.stepsPerFlush { break }
        }
        if !outbound.isEmpty || handshake.pending != nil || lws_partial_buffered(wsi) != 0 || pendingPong != nil {
            requestWritable()
        } else {
            handler?.connectionDidDrainOutbound(self)
        }
    }

    /// The most writes one connection makes per flush (each up to a batch, 64 KiB by
    /// default): the rest waits for a writable callback, so one connection with a deep
    /// queue does not hold up the loop.
    static let stepsPerFlush = 4

    /// Writes the queue's next step (one `lws_write`). Returns `false` when lws failed.
    private func writeNextStep(_ wsi: OpaquePointer) -> Bool {
        let step = outbound.nextStep()
        let expected: Int
        let result: Int32
        switch step {
        case .idle:
            return true
        case .preframed(let count):
            // Complete frames already: written as they are (LWS_WRITE_HTTP on a client's
            // ws connection is lws's raw path; lws keeps what the socket does not take and
            // holds back the next writable callback until it is sent).
            expected = count
            result = outbound.withHeadPayload { cws_write(wsi, $0.baseAddress, count, cws_write_raw) }
        case .batch(let batch):
            var scratch = eventLoop.buffers.takeScratch()
            outbound.encodeBatch(batch, into: &scratch)
            expected = batch.byteCount
            result = scratch.withUnsafeMutableBufferPointer { cws_write(wsi, $0.baseAddress, batch.byteCount, cws_write_raw) }
            eventLoop.buffers.returnScratch(&scratch)
        case .payload(let write) where framesItself:
            // The frame header goes in the bytes before this piece: the headroom, or the
            // part of the payload written already (lws sent or copied it).
            let opcode = write.isFirst ? FrameHeader.opcode(write.kind) : 0
            let headerLength = FrameHeader.length(payloadLength: write.count, masked: false)
            expected = headerLength + write.count
            result = outbound.withHeadStorage { storage in
                let start = OutboundFrame.headroom + write.offset - headerLength
                FrameHeader.write(
                    into: storage.baseAddress! + start, fin: write.isLast, opcode: opcode, payloadLength: write.count)
                return cws_write(wsi, storage.baseAddress! + start, expected, cws_write_raw)
            }
        case .payload(let write):
            let initial = write.kind == .text ? cws_write_text : cws_write_binary
            let flags = write.isFragmented
                ? cws_write_ws_flags(initial, write.isFirst ? 1 : 0, write.isLast ? 1 : 0) : initial
            expected = write.count
            result = outbound.withHeadPayload { cws_write(wsi, $0.baseAddress! + write.offset, write.count, flags) }
        }
        writeCalls += 1
        bytesWritten &+= expected
        if result < expected {
            logger.debug("short write, closing", metadata: ["connection": "\(id)"])
            return false
        }
        _ = outbound.complete(step, pool: &eventLoop.buffers)
        return true
    }

    /// Sends the close frame `action` asks for (with the next lws write: the caller
    /// returns -1), or nothing when it is an abort.
    private func sendCloseFrame(_ wsi: OpaquePointer, _ action: CloseHandshake.WritableAction) {
        guard case .sendClose(let code, let reason) = action else { return }
        var bytes = CloseFramePayload.truncatedReason(reason)
        bytes.withUnsafeMutableBufferPointer { buffer in
            cws_close_reason(wsi, Int32(code.rawValue), buffer.baseAddress, buffer.count)
        }
    }

    /// The peer sent a close frame (`input`: big-endian code, then the reason), client
    /// side (lws's `WS_PEER_INITIATED_CLOSE`).
    ///
    /// A close frame that breaks RFC 6455 §5.5.1/§7.4 (a one-byte payload, a code no
    /// peer may send such as 1005 or 5000) is not echoed: lws is given 1002 as this
    /// side's close reason and told to close (returns nonzero), so that it answers with
    /// that close frame.
    func handlePeerClose(_ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        let payload = UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length)
        switch CloseFramePayload.parse(payload) {
        case .valid(let code, let reason):
            handshake.peerClosed(code: code, reason: reason)
            return 0
        case .invalid(let code, let reason):
            return refuseClose(code, reason)
        }
    }

    /// Answers an invalid close frame with `code` and `reason` (and records them as how
    /// the connection ended); returns what lws must be told (close).
    private func refuseClose(_ code: WebSocketCloseCode, _ reason: String) -> Int32 {
        logger.debug("invalid close frame from the peer", metadata: ["reason": "\(reason)"])
        handshake.peerClosed(code: code, reason: reason)
        if let wsi {
            var bytes = CloseFramePayload.truncatedReason(reason)
            lws_close_reason(wsi, lws_close_status(rawValue: UInt32(code.rawValue)), &bytes, bytes.count)
        }
        return -1
    }

    /// The connection closed (lws's CLOSED / CLIENT_CLOSED).
    func handleClosed() {
        end(handshake.closed())
    }

    /// lws is freeing the wsi: nothing reaches this object afterwards.
    func handleDestroyed() {
        end(handshake.destroyed(role: role), failure: "connection ended before the handshake finished")
        wsi = nil
    }

    /// A client connection failed before opening, as lws explains it (`lwsMessage`).
    func handleConnectionError(lwsMessage: String) {
        handleConnectionError(WebSocketClient.explainConnectionFailure(lwsMessage, usesTLS: usesTLS))
    }

    /// A client connection failed before opening.
    func handleConnectionError(_ message: String) {
        end(handshake.failedToConnect(), failure: message)
    }

    private func end(_ ending: CloseHandshake.Ending, failure: String = "") {
        guard ending != .alreadyEnded else { return }
        wsi = nil
        outbound.removeAll()
        inbound.reset()
        pendingInput = []
        pendingPong = nil
        switch ending {
        case .alreadyEnded:
            break
        case .closed, .endedUnopened:
            let handler = self.handler
            self.handler = nil
            if ending == .closed, !isRefused {
                handler?.connection(self, didCloseWith: handshake.code, reason: handshake.reason)
            }
        case .failedToConnect:
            let error = TransportError(code: .connectionFailed, message: failure)
            // Reported from the loop's queue so that it never arrives before connect() returns.
            eventLoop.executeSoon { [self] in
                let handler = self.handler
                self.handler = nil
                handler?.connection(self, didFailToConnect: error)
            }
        }
    }

    // MARK: - Client handshake

    /// Appends the client's handshake headers (`Authorization`) at lws's header `cursor`
    /// (an `unsigned char **`) with `space` bytes left. Returns nonzero on failure.
    func appendHandshakeHeaders(_ wsi: OpaquePointer, cursor: UnsafeMutableRawPointer, space: Int) -> Int32 {
        guard let authorization else { return 0 }
        var value = Array(authorization.utf8)
        let failed = value.withUnsafeMutableBufferPointer { buffer in
            cws_append_handshake_header(
                wsi, WSI_TOKEN_HTTP_AUTHORIZATION, buffer.baseAddress, Int32(buffer.count), cursor, space)
        }
        return failed != 0 ? -1 : 0
    }

    private static let counter = ConnectionCounter()
}

/// A process-wide connection counter.
private final class ConnectionCounter: Sendable {
    private let value = Atomic<UInt64>(0)
    func next() -> UInt64 { value.add(1, ordering: .relaxed).newValue }
}
