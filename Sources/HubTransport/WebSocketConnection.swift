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
    @exclusivity(unchecked) public internal(set) var isReadingPaused = false
    /// `lws_write` calls made so far (fewer than messages when small ones are batched).
    @exclusivity(unchecked) public internal(set) var writeCalls = 0
    /// Bytes handed to the socket so far (frame headers included), counted per write.
    @exclusivity(unchecked) public internal(set) var bytesWritten = 0
    /// Bytes of message payload received so far, counted per lws chunk.
    @exclusivity(unchecked) public internal(set) var bytesReceived = 0
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
    lazy var clientArena = ContextArena()

    let logger: Logger
    @exclusivity(unchecked) var handshake = CloseHandshake()
    @exclusivity(unchecked) var outbound: OutboundQueue
    @exclusivity(unchecked) var inbound: InboundAssembler
    /// Whether complete text messages are checked for UTF-8 before delivery.
    let validatesText: Bool
    @exclusivity(unchecked) var masking = WebSocketMasking()
    @exclusivity(unchecked) var writableRequested = false
    /// Whether the rest of the queue waits for a writable callback (the socket did not
    /// take everything, or a close is due).
    var isAwaitingWritable: Bool { writableRequested }
    @exclusivity(unchecked) var flushScheduled = false
    /// The keepalive its server's sweep advances (server connections with a ping interval).
    @exclusivity(unchecked) var keepalive: Keepalive?

    // The raw socket's side (server connections).
    /// Whether this side frames, parses and closes itself (a server connection).
    let framesItself: Bool
    /// The socket the connection runs on (server connections).
    weak var socket: ServerSocket?
    @exclusivity(unchecked) var frames: WebSocketFrameParser
    /// The payload of the last ping not answered yet (one pong answers a flood).
    @exclusivity(unchecked) var pendingPong: [UInt8]?
    /// Bytes read while reading was paused, parsed once it resumes.
    @exclusivity(unchecked) var pendingInput: [UInt8] = []
    /// Whether this side's close frame went out (or is decided: ``closeAnswer``).
    @exclusivity(unchecked) var closeFrameSent = false
    /// The code of the close frame that answers the peer's, written when the socket
    /// closes.
    @exclusivity(unchecked) var closeAnswer: WebSocketCloseCode?
    /// Whether the connection failed (a close frame for a broken rule): input is dropped.
    @exclusivity(unchecked) var hasFailed = false

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

    func requestWritable() {
        guard !writableRequested, handshake.isEstablished, let wsi else { return }
        writableRequested = true
        lws_callback_on_writable(wsi)
    }

    /// Counts a queued message for the loop's write coalescing and schedules the write;
    /// a queue that waits for it and holds ``Limits/promptWriteSize`` bytes is written at
    /// the end of the pass.
    @inline(__always)
    func didQueueMessage(schedulesFlush: Bool = true) {
        eventLoop.noteMessageQueued()
        if schedulesFlush { scheduleFlush() }
        if flushScheduled, outbound.queuedBytes >= limits.promptWriteSize { eventLoop.writeAtEndOfPass() }
    }

    /// Asks the loop to write the queue at the end of its service pass (see ``flush()``),
    /// unless a write is already due.
    func scheduleFlush() {
        guard !flushScheduled, !writableRequested, handshake.isEstablished, wsi != nil else { return }
        flushScheduled = true
        eventLoop.scheduleFlush(self)
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
