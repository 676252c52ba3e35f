/// One plain HTTP request on a server's port and its answer, confined to the loop.
///
/// The server hands it to its delegate (``WebSocketServerDelegate/server(_:didReceive:)``)
/// once the request and its body have arrived. The delegate answers once, now or later
/// on the loop, either with ``respond(_:)`` (a whole response, sent with a
/// `content-length`) or with a stream: ``startStreaming(status:contentType:headers:)``
/// sends the status and headers at once, then each ``write(_:)`` sends a piece of the
/// body as the application produces it (chunked on HTTP/1.1), until ``endStream()`` or
/// the peer goes away. A stream's ``handler`` hears when the bytes queued so far are all
/// out (write more) and when the peer closed.
///
/// Answers on a keep-alive connection go out in the order of the requests. A request
/// whose connection closes before the answer is dropped (``isOpen`` turns false).
public final class HTTPExchange {
    /// The request.
    public let request: HTTPRequest
    /// Hears about a streamed answer: its queue drained, or the peer closed.
    public var handler: (any HTTPExchangeHandler)?

    private enum Phase: Equatable {
        /// Waiting for ``respond(_:)`` or ``startStreaming(status:contentType:headers:)``.
        case awaitingResponse
        /// Streaming the body: `chunked` on HTTP/1.1 (else until the connection closes).
        case streaming(chunked: Bool)
        /// The answer is out (or the connection closed).
        case finished
    }

    private var socket: ServerSocket?
    private var phase = Phase.awaitingResponse
    private let keepsAlive: Bool
    private let eventLoop: EventLoop

    init(request: HTTPRequest, socket: ServerSocket, keepsAlive: Bool) {
        self.request = request
        self.socket = socket
        self.keepsAlive = keepsAlive
        self.eventLoop = socket.eventLoop
    }

    /// Whether the connection is still there and the answer not yet complete.
    public var isOpen: Bool {
        socket != nil && phase != .finished
    }

    /// Whether the answer is being streamed (started and not ended).
    public var isStreaming: Bool {
        if case .streaming = phase { return socket != nil }
        return false
    }

    /// Bytes of the answer queued and not yet handed to the socket.
    public var queuedBytes: Int { socket?.queuedOutputBytes ?? 0 }

    /// Answers the request (loop thread only; once: later calls are ignored). For a
    /// `HEAD` request only the headers are sent.
    public func respond(_ response: HTTPResponse) {
        eventLoop.preconditionInEventLoop()
        guard phase == .awaitingResponse, let socket else { return }
        phase = .finished
        let head = HTTPResponseEncoding.head(
            status: response.status, contentType: response.contentType, headers: response.headers,
            framing: .length(response.body.count), keepsAlive: keepsAlive)
        socket.queue(head)
        if request.method != "HEAD" { socket.queue(response.body) }
        finish(socket, keepsAlive: keepsAlive)
    }

    /// Starts a streamed answer: the status line and headers go out now; the body follows
    /// with ``write(_:)`` until ``endStream()``. On HTTP/1.1 the body is chunked and the
    /// connection stays open afterwards; on HTTP/1.0 it ends when the connection closes.
    /// For `HEAD` only the headers are sent and the answer is complete at once.
    /// Returns `false` (and sends nothing) when the request was answered already or its
    /// connection closed. Loop thread only.
    @discardableResult
    public func startStreaming(
        status: Int = 200, contentType: String, headers: [HTTPResponse.Header] = []
    ) -> Bool {
        eventLoop.preconditionInEventLoop()
        guard phase == .awaitingResponse, let socket else { return false }
        let chunked = request.version != "HTTP/1.0"
        let keepsAlive = chunked && self.keepsAlive
        socket.queue(HTTPResponseEncoding.head(
            status: status, contentType: contentType, headers: headers,
            framing: chunked ? .chunked : .untilClose, keepsAlive: keepsAlive))
        if request.method == "HEAD" {
            phase = .finished
            finish(socket, keepsAlive: keepsAlive)
            return true
        }
        phase = .streaming(chunked: chunked)
        return true
    }

    /// Sends one piece of a streamed body. Returns `false` (and drops it) when no stream
    /// is open (not started, ended, or the peer closed). Empty pieces send nothing.
    /// Loop thread only.
    @discardableResult
    public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        eventLoop.preconditionInEventLoop()
        guard case .streaming(let chunked) = phase, let socket else { return false }
        guard !bytes.isEmpty else { return true }
        if chunked {
            socket.queueChunk(bytes)
        } else {
            socket.queue(bytes)
        }
        return true
    }

    /// Sends one piece of a streamed body (see ``write(_:)-(UnsafeRawBufferPointer)``).
    @discardableResult
    public func write<Bytes: Collection>(_ bytes: Bytes) -> Bool where Bytes.Element == UInt8 {
        if let written = bytes.withContiguousStorageIfAvailable({ write(UnsafeRawBufferPointer($0)) }) {
            return written
        }
        return Array(bytes).withUnsafeBytes { write($0) }
    }

    /// Ends a streamed answer (the last chunk on HTTP/1.1; the connection closes on
    /// HTTP/1.0). With `closingConnection` the connection closes after it in any case:
    /// once what is queued is out, or within a few seconds when the peer does not read
    /// it (a stream ended for a reader that stopped reading). Loop thread only; ignored
    /// when no stream is open.
    public func endStream(closingConnection: Bool = false) {
        eventLoop.preconditionInEventLoop()
        guard case .streaming(let chunked) = phase, let socket else { return }
        phase = .finished
        if chunked { socket.queue(HTTPResponseEncoding.lastChunk) }
        finish(socket, keepsAlive: chunked && keepsAlive && !closingConnection)
    }

    private func finish(_ socket: ServerSocket, keepsAlive: Bool) {
        self.socket = nil
        handler = nil
        socket.exchangeFinished(self, keepsAlive: keepsAlive)
    }

    /// Everything queued was handed to the socket after a wait: a stream may write more.
    func outputDrained() {
        guard isStreaming else { return }
        handler?.exchangeDidDrain(self)
    }

    /// The connection closed: nothing more is written.
    func connectionClosed() {
        let wasStreaming = isStreaming
        socket = nil
        phase = .finished
        let handler = self.handler
        self.handler = nil
        if wasStreaming { handler?.exchangeDidClose(self) }
    }
}

/// Hears about a streamed answer of an ``HTTPExchange``, on the loop thread.
public protocol HTTPExchangeHandler: AnyObject {
    /// Everything the stream queued was handed to the socket after the socket made it
    /// wait: write more now (back pressure: write while ``HTTPExchange/queuedBytes`` is
    /// small, then wait for this).
    func exchangeDidDrain(_ exchange: HTTPExchange)

    /// The peer closed the connection before the stream ended.
    func exchangeDidClose(_ exchange: HTTPExchange)
}

extension HTTPExchangeHandler {
    /// Nothing.
    public func exchangeDidDrain(_ exchange: HTTPExchange) {}
}
