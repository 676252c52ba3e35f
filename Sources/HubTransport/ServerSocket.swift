import CWebsockets
import Logging

/// One socket a ``WebSocketServer`` accepted (or adopted from another loop), served in
/// lws's raw-skt role: lws accepts it, runs TLS, reads and writes its bytes and says when
/// it is writable; this object reads HTTP/1.1 requests from it (``HTTPRequestParser``),
/// answers them (``HTTPExchange``), and after a WebSocket upgrade hands its bytes to its
/// ``WebSocketConnection``, which parses the frames itself.
///
/// Requests are answered in order: while one is being answered, what the client sends
/// next (pipelined requests) waits here, bounded, and is parsed once the answer is out.
/// A refused request is answered with its status and `connection: close`, then the
/// socket closes gracefully (``beginLingering()``).
///
/// Confined to the server's loop; lws's per-session slot holds an unretained pointer to
/// it, the server a strong one until lws frees the socket.
final class ServerSocket {
    /// What the socket carries now.
    enum Mode: Equatable {
        /// HTTP/1.1 requests.
        case http
        /// WebSocket frames, read by ``connection``.
        case webSocket
        /// The last answer is out (or going): what arrives is dropped until the peer
        /// closes, or the deadline.
        case lingering
        /// lws closed the socket.
        case closed
    }

    /// The most bytes read ahead while a request is being answered (pipelined requests);
    /// beyond it the socket is not read until the answer is out.
    static let maximumStashedBytes = 64 << 10
    /// How long a socket whose last answer is out waits for its peer to close (seconds).
    static let lingerSeconds: Int64 = 2
    /// How long a WebSocket close this side sent waits for the peer's (seconds).
    static let closeAcknowledgementSeconds: Int64 = 5
    /// The largest write handed to lws at once.
    static let writeSize = 64 << 10

    unowned let server: WebSocketServer
    let eventLoop: EventLoop
    private(set) var wsi: OpaquePointer?
    private(set) var mode = Mode.http
    /// The WebSocket connection, after an upgrade.
    private(set) var connection: WebSocketConnection?
    /// The peer's address, for logs and requests.
    let peer: String?
    /// When the server closes the socket if it is still open (set while it closes).
    var deadline: Int64?

    private var parser: HTTPRequestParser
    /// The request whose body is being read.
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// The request being answered.
    private(set) var exchange: HTTPExchange?
    /// Bytes read while a request is answered, parsed once it is (or, after an upgrade
    /// request waiting for its answer, the client's first frames).
    private var stashed: [UInt8] = []
    /// The upgrade request read and waiting for its turn to be answered
    /// (``WebSocketServer/upgradeSoon(_:)``).
    private var pendingUpgrade: HTTPRequestHead?
    private var readingPaused = false
    /// Bytes to write (answers), from `outputStart` on.
    private var output: [UInt8] = []
    private var outputStart = 0
    private var shutDown = false
    private var timeoutCleared = false
    private var writableRequested = false

    init(server: WebSocketServer, wsi: OpaquePointer) {
        self.server = server
        self.eventLoop = server.eventLoop
        self.wsi = wsi
        self.parser = HTTPRequestParser(limits: server.configuration.requestLimits)
        self.peer = WebSocketCallbackDispatcher.peer(wsi)
    }

    /// Bytes of answers not yet handed to lws.
    var queuedOutputBytes: Int { output.count - outputStart }

    // MARK: - Events from lws

    /// Bytes read from the socket. Returns nonzero to close it now.
    func receive(_ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard let wsi, let input, length > 0 else { return 0 }
        if !timeoutCleared {
            // A TLS socket keeps the timeout lws set when its handshake completed.
            timeoutCleared = true
            if server.configuration.tls != nil {
                cws_clear_timeout(wsi)
                server.tlsEstablished(wsi)
            }
        }
        let buffer = UnsafeMutableRawBufferPointer(start: input, count: length)
        switch mode {
        case .webSocket:
            guard let connection else { return -1 }
            return connection.receive(raw: buffer)
        case .lingering, .closed:
            return 0
        case .http:
            if exchange != nil || pendingUpgrade != nil || !stashed.isEmpty {
                stash(UnsafeRawBufferPointer(buffer))
                return 0
            }
            return parseRequests(buffer)
        }
    }

    /// lws can take more bytes. Returns nonzero to close the socket.
    func writable() -> Int32 {
        writableRequested = false
        guard let wsi else { return -1 }
        switch mode {
        case .webSocket:
            guard let connection else { return -1 }
            return connection.handleWritable()
        case .closed:
            return -1
        case .http, .lingering:
            guard writeOutput(wsi, notifiesDrain: true) else { return -1 }
            return 0
        }
    }

    /// lws closed the socket.
    func closed() {
        guard mode != .closed else { return }
        mode = .closed
        deadline = nil
        if let exchange {
            self.exchange = nil
            exchange.connectionClosed()
        }
        if let connection { server.connectionClosed(connection) }
    }

    /// lws frees the socket: nothing reaches this object afterwards.
    func destroyed() {
        closed()
        if let connection { server.connectionDestroyed(connection) }
        wsi = nil
        output = []
        stashed = []
    }

    // MARK: - HTTP requests

    /// Parses requests from `buffer` until one is complete (it is then answered before
    /// the next is parsed), the bytes run out, or one is refused.
    private func parseRequests(_ buffer: UnsafeMutableRawBufferPointer) -> Int32 {
        var offset = 0
        while mode == .http, exchange == nil {
            let event = parser.parse(UnsafeRawBufferPointer(buffer), from: &offset)
            switch event {
            case .needMore:
                return 0
            case .head(let head):
                if head.asksForWebSocket {
                    // Answered at the end of the pass, among the few answered a pass:
                    // reading it costs little, answering it (the 101, the connection,
                    // what the delegate does when it opens) much more.
                    if let wsi { server.requestArrived(wsi) }
                    pendingUpgrade = head
                    if offset < buffer.count { stash(UnsafeRawBufferPointer(rebasing: buffer[offset...])) }
                    server.upgradeSoon(self)
                    return 0
                }
                self.head = head
                body = []
                if head.expectsContinue, head.bodyFraming != .none {
                    queue(HTTPResponseEncoding.continueResponse)
                }
            case .body(let range):
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[range]))
            case .end:
                requestComplete()
                // Answered at once (and kept alive): the next request is parsed now.
                if exchange != nil, offset < buffer.count {
                    stash(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
                }
            case .failure(let failure):
                if let wsi { server.requestArrived(wsi) }
                // A failure in the body of a request whose head was read knows its path.
                let path = failure.path ?? head?.path
                let answer = server.configuration.refusalAnswer?(failure.status, failure.message, path)
                refuse(answer ?? WebSocketUpgrade.refusal(failure.status, failure.message), keepAlive: false)
                return 0
            }
        }
        return 0
    }

    /// Keeps bytes read while a request is answered; stops reading beyond the bound.
    private func stash(_ bytes: UnsafeRawBufferPointer) {
        stashed.append(contentsOf: bytes)
        if stashed.count >= ServerSocket.maximumStashedBytes, !readingPaused, let wsi {
            readingPaused = true
            lws_rx_flow_control(wsi, 0)
        }
    }

    /// The request is complete: its exchange goes to the delegate.
    private func requestComplete() {
        guard let head, let wsi else { return }
        self.head = nil
        server.requestArrived(wsi)
        let request = HTTPRequest(
            method: head.method, path: head.path ?? head.target, query: head.query,
            authorization: head.header("authorization"), peer: peer, headers: head.headers, body: body,
            version: head.minorVersion == 0 ? "HTTP/1.0" : "HTTP/1.1")
        body = []
        let exchange = HTTPExchange(request: request, socket: self, keepsAlive: head.keepsAlive)
        self.exchange = exchange
        server.deliver(exchange)
    }

    /// Answers with `response` and closes (a malformed request, a refused upgrade).
    private func refuse(_ response: HTTPResponse, keepAlive: Bool) {
        let bytes = HTTPResponseEncoding.head(
            status: response.status, contentType: response.contentType, headers: response.headers,
            framing: .length(response.body.count), keepsAlive: keepAlive)
        queue(bytes)
        queue(response.body)
        beginLingering()
    }

    // MARK: - Answers (from HTTPExchange)

    /// Queues `bytes` of an answer and writes what lws takes now.
    func queue<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        guard !bytes.isEmpty else { return }
        queue { $0.append(contentsOf: bytes) }
    }

    /// Queues `data` as one chunk of a chunked body, framed in place, and writes what lws
    /// takes now.
    func queueChunk(_ data: UnsafeRawBufferPointer) {
        guard !data.isEmpty else { return }
        queue { HTTPResponseEncoding.appendChunk(data, to: &$0) }
    }

    private func queue(_ append: (inout [UInt8]) -> Void) {
        guard mode == .http || mode == .lingering, let wsi else { return }
        append(&output)
        // Written now unless lws still holds part of an earlier write.
        if !writableRequested, !writeOutput(wsi, notifiesDrain: false) { killSoon() }
    }

    /// The exchange's answer is complete: the next request is read, or the socket closes.
    func exchangeFinished(_ finished: HTTPExchange, keepsAlive: Bool) {
        guard exchange === finished else { return }
        exchange = nil
        guard keepsAlive, mode == .http, let wsi else {
            beginLingering()
            return
        }
        // Waiting for the next request counts as waiting for a handshake (bounded, timed).
        server.waitingForRequest(wsi)
        guard !stashed.isEmpty else { return }
        // The requests read meanwhile: parsed outside lws's callbacks about this socket.
        eventLoop.executeSoon { [weak self] in self?.parseStashed() }
    }

    private func parseStashed() {
        guard mode == .http, exchange == nil, wsi != nil else { return }
        var bytes: [UInt8] = []
        swap(&bytes, &stashed)
        if readingPaused, let wsi {
            readingPaused = false
            lws_rx_flow_control(wsi, 1)
        }
        let result = bytes.withUnsafeMutableBytes { parseRequests($0) }
        if result != 0 { killSoon() }
    }

    private func requestWritable() {
        guard !writableRequested, let wsi else { return }
        writableRequested = true
        lws_callback_on_writable(wsi)
    }

    /// Writes queued answer bytes while lws takes them whole; returns `false` when the
    /// socket failed. From a writable callback (`notifiesDrain`), a stream that waited
    /// is told when everything is out.
    private func writeOutput(_ wsi: OpaquePointer, notifiesDrain: Bool) -> Bool {
        while outputStart < output.count, lws_partial_buffered(wsi) == 0 {
            let count = min(ServerSocket.writeSize, output.count - outputStart)
            let written = output.withUnsafeMutableBytes { buffer in
                cws_write(wsi, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self) + outputStart, count, cws_write_raw)
            }
            guard written >= count else { return false }
            outputStart += count
        }
        if outputStart == output.count {
            output.removeAll(keepingCapacity: output.capacity <= ServerSocket.writeSize)
            outputStart = 0
        } else {
            requestWritable()
            return true
        }
        if lws_partial_buffered(wsi) != 0 {
            // lws asks for a writable callback itself once its copy is out.
            return true
        }
        if mode == .lingering {
            shutDownSending(wsi)
        } else if notifiesDrain {
            exchange?.outputDrained()
        }
        return true
    }

    // MARK: - Closing

    /// Closes gracefully once the queued bytes are out: the sending side is shut down and
    /// what the peer still sends is dropped until it closes (a close with unread input
    /// would reset the connection, and the peer could lose the answer), or the deadline.
    func beginLingering() {
        guard mode == .http || mode == .webSocket, let wsi else { return }
        mode = .lingering
        stashed = []
        if readingPaused {
            readingPaused = false
            lws_rx_flow_control(wsi, 1)
        }
        setDeadline(seconds: ServerSocket.lingerSeconds)
        if outputStart == output.count, lws_partial_buffered(wsi) == 0 {
            shutDownSending(wsi)
        } else {
            requestWritable()
        }
    }

    /// The WebSocket connection's last frame is written: linger as above.
    func connectionLingers() {
        guard mode == .webSocket else { return }
        beginLingering()
    }

    private func shutDownSending(_ wsi: OpaquePointer) {
        guard !shutDown else { return }
        shutDown = true
        cws_shutdown_write(wsi)
    }

    /// The WebSocket close handshake is complete (the peer's close frame read; this
    /// side's written, or written when the socket closes): nothing more is read, and the
    /// server closes the socket within a few passes (``WebSocketServer/closeSoon(_:)``): a
    /// close costs lws a walk of every connection of the loop, and a pass that closes
    /// hundreds would delay the rest.
    func closeAfterHandshake() {
        guard mode == .webSocket, let wsi else { return }
        mode = .lingering
        stashed = []
        if !readingPaused {
            readingPaused = true
            lws_rx_flow_control(wsi, 0)
        }
        server.closeSoon(self)
    }

    /// Closes the socket now (outside lws's callbacks about it), after the answer to the
    /// peer's close frame when one is due: RFC 6455 §7.1.1 has the server close the TCP
    /// connection first once both close frames are exchanged.
    func killNow() {
        guard let wsi else { return }
        connection?.writeDeferredCloseAnswer()
        guard self.wsi != nil else { return }
        if lws_partial_buffered(wsi) != 0 {
            // lws holds part of the answer: the sending side shuts down once it is out
            // (``writable()``), the socket closes at the deadline unless lws sees the
            // peer go first.
            setDeadline(seconds: ServerSocket.lingerSeconds)
            return
        }
        cws_kill_sync(wsi)
    }

    /// Sets when the server closes the socket, `seconds` from now.
    func setDeadline(seconds: Int64) {
        deadline = EventLoop.monotonicNanoseconds() + seconds * 1_000_000_000
        server.closesLater(self)
    }

    /// Closes the socket at lws's next pass (outside lws's callbacks about it).
    func killSoon() {
        guard let wsi else { return }
        cws_kill_async(wsi)
        eventLoop.requestLibWebSocketsService()
    }

    // MARK: - The WebSocket upgrade

    /// Answers the upgrade request read earlier (outside lws's callbacks, at the end of a
    /// pass), with what the client sent after it.
    func upgradeNow() {
        guard mode == .http, let head = pendingUpgrade, let wsi else { return }
        pendingUpgrade = nil
        var rest: [UInt8] = []
        swap(&rest, &stashed)
        if readingPaused {
            readingPaused = false
            lws_rx_flow_control(wsi, 1)
        }
        let result = rest.withUnsafeMutableBytes { upgrade(head, rest: $0) }
        if result != 0 { killSoon() }
    }

    /// Answers an upgrade request: 101 and the connection, or the error that refuses it.
    /// `rest` holds what the client sent after the request (its first frames).
    private func upgrade(_ head: HTTPRequestHead, rest: UnsafeMutableRawBufferPointer) -> Int32 {
        guard let wsi else { return -1 }
        server.requestArrived(wsi)
        guard !server.isClosed, !server.isRefusingUpgrades else {
            refuse(WebSocketUpgrade.refusal(503, "this server accepts no WebSocket connections now"), keepAlive: false)
            return 0
        }
        let accepted: WebSocketUpgrade.Accepted
        switch WebSocketUpgrade.evaluate(head, subprotocol: server.configuration.subprotocol) {
        case .refuse(let response):
            refuse(response, keepAlive: false)
            return 0
        case .accept(let value):
            accepted = value
        }
        let request = WebSocketUpgradeRequest(path: head.path ?? "/", authorization: head.header("authorization"))
        guard server.delegate.server(server, shouldAccept: request) else {
            refuse(WebSocketUpgrade.refusal(403, "the WebSocket upgrade was refused"), keepAlive: false)
            return 0
        }
        let connection = server.makeConnection(for: request, subprotocol: accepted.subprotocol, peer: peer)
        connection.socket = self
        self.connection = connection
        mode = .webSocket
        let answer = WebSocketUpgrade.switchingProtocols(accepted)
        let written = answer.withUnsafeBufferPointer { buffer in
            cws_write(wsi, UnsafeMutablePointer(mutating: buffer.baseAddress!), buffer.count, cws_write_raw)
        }
        guard written >= answer.count else { return -1 }
        server.upgraded(connection, wsi: wsi)
        guard !rest.isEmpty, connection.state == .open || connection.state == .closing else { return 0 }
        return connection.receive(raw: rest)
    }
}
