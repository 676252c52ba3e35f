import HubTransport

/// A streamed HTTP answer as the hub's loop writes it, whether its socket is served by
/// the hub's loop (``LocalHTTPStream``) or by a connection loop (``RelayedHTTPStream``).
/// Confined to the hub's loop; its callbacks run there.
protocol HTTPStreamChannel: AnyObject {
    /// Sends the status line and headers.
    func start(status: Int, contentType: String, headers: [HTTPResponse.Header])
    /// Sends one piece of the body.
    func write(_ bytes: [UInt8])
    /// Ends the body; with `closingConnection` the connection closes after it.
    func end(closingConnection: Bool)
    /// Bytes written and not yet handed to the socket.
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

/// The stream of an exchange on the hub's own loop.
final class LocalHTTPStream: HTTPStreamChannel, HTTPExchangeHandler {
    private let exchange: HTTPExchange
    var onDrain: (() -> Void)?
    var onClose: (() -> Void)?

    init(_ exchange: HTTPExchange) {
        self.exchange = exchange
    }

    func start(status: Int, contentType: String, headers: [HTTPResponse.Header]) {
        exchange.handler = self
        if !exchange.startStreaming(status: status, contentType: contentType, headers: headers) {
            // The peer left before the stream began.
            onClose?()
        }
    }

    func write(_ bytes: [UInt8]) {
        exchange.write(bytes)
    }

    func end(closingConnection: Bool) {
        exchange.endStream(closingConnection: closingConnection)
    }

    var queuedBytes: Int { exchange.queuedBytes }

    func exchangeDidDrain(_ exchange: HTTPExchange) {
        onDrain?()
    }

    func exchangeDidClose(_ exchange: HTTPExchange) {
        onClose?()
    }
}
