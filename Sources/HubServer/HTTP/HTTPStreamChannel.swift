import HubTransport

/// A streamed HTTP answer as the hub's loop writes it, whether its socket is served by
/// the hub's loop (``LocalHTTPStream``) or by a connection loop (``RelayedHTTPStream``).
///
/// Pieces appended until the hub's loop next writes its connections (at the end of a
/// pass, or later while a stream's writes are held back, ``WriteCoalescing``) go out
/// together as one chunk and one socket write: an event stream fanned out to many readers
/// costs each of them one write per loop write, not one per event.
/// Confined to the hub's loop; its callbacks run there.
protocol HTTPStreamChannel: AnyObject {
    /// Sends the status line and headers.
    func start(status: Int, contentType: String, headers: [HTTPResponse.Header])
    /// Appends one piece of the body to what goes out at the loop's next write.
    func append(_ build: (inout [UInt8]) -> Void)
    /// Ends the body after what was appended; with `closingConnection` the connection
    /// closes after it.
    func end(closingConnection: Bool)
    /// Bytes appended and not yet handed to the socket.
    var queuedBytes: Int { get }
    /// Runs when the queued bytes are out after a wait.
    var onDrain: (() -> Void)? { get set }
    /// Runs when the peer closed the connection during the stream.
    var onClose: (() -> Void)? { get set }
}

/// How the hub's loop answers one HTTP request: whole (``respond``, once), or streamed
/// through the channel ``stream`` makes (once, instead).
struct HTTPReply {
    /// Sends a whole answer.
    let respond: (HTTPResponse) -> Void
    /// Makes the channel of a streamed answer (nothing is sent until it starts).
    let stream: () -> any HTTPStreamChannel
}

/// The stream of an exchange on the hub's own loop: what is appended waits for the
/// loop's next write (``LoopWriter``), as its WebSocket connections' messages do.
final class LocalHTTPStream: HTTPStreamChannel, HTTPExchangeHandler, LoopWriter {
    private let exchange: HTTPExchange
    private let eventLoop: EventLoop
    /// The body appended since the last write.
    private var pending: [UInt8] = []
    /// Whether the loop will call ``write()`` at its next write.
    private var awaitsWrite = false
    var onDrain: (() -> Void)?
    var onClose: (() -> Void)?

    init(_ exchange: HTTPExchange, on eventLoop: EventLoop) {
        self.exchange = exchange
        self.eventLoop = eventLoop
    }

    func start(status: Int, contentType: String, headers: [HTTPResponse.Header]) {
        exchange.handler = self
        if !exchange.startStreaming(status: status, contentType: contentType, headers: headers) {
            // The peer left before the stream began.
            onClose?()
        }
    }

    func append(_ build: (inout [UInt8]) -> Void) {
        build(&pending)
        eventLoop.noteMessageQueued()
        if pending.count >= HTTPStreamChannels.eagerWriteBytes {
            writePending()
        } else if !awaitsWrite {
            awaitsWrite = true
            eventLoop.writeWithConnections(self)
        }
    }

    func end(closingConnection: Bool) {
        writePending()
        exchange.endStream(closingConnection: closingConnection)
    }

    var queuedBytes: Int { exchange.queuedBytes + pending.count }

    var pendingConnections: Int { pending.isEmpty ? 0 : 1 }

    /// Writes what was appended (the loop writes, or it has grown large).
    func write() {
        awaitsWrite = false
        writePending()
    }

    private func writePending() {
        guard !pending.isEmpty else { return }
        exchange.write(pending)
        pending.removeAll(keepingCapacity: true)
    }

    func exchangeDidDrain(_ exchange: HTTPExchange) {
        onDrain?()
    }

    func exchangeDidClose(_ exchange: HTTPExchange) {
        pending = []
        onClose?()
    }
}

/// What the two channels share.
enum HTTPStreamChannels {
    /// How large the body appended in one pass grows before it is written (or handed to
    /// the connection loop) at once rather than at the loop's next write: a pass that
    /// handles many values would otherwise hold them all back. As a relayed WebSocket
    /// session's batch (``RelayedSession/eagerHandOverBytes``).
    static let eagerWriteBytes = RelayedSession.eagerHandOverBytes
}
