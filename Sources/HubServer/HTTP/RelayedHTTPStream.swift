import HubTransport
import Synchronization

/// The stream of an exchange served by a connection loop, as the hub's loop writes it.
/// What is appended until the hub's loop writes goes to the connection loop as one piece,
/// in the same hand-over as that loop's WebSocket messages (``ConnectionLoop/toConnections``),
/// and the start and the end go the same way after it, in order; the exchange's drains
/// and close come back through the connection loop's hand-off (``HTTPStreamRelay``).
/// Confined to the hub's loop.
final class RelayedHTTPStream: HTTPStreamChannel, HandOffPlaceHolder {
    private let relay: HTTPStreamRelay
    private let figures: HTTPStreamRelay.Figures
    /// The connection loop, as the hub's loop sees it.
    private let loop: ConnectionLoop
    /// The body appended since the last hand-over.
    private var pending: [UInt8] = []
    /// The place of ``pending`` in the loop's hand-off (the end hands the body over
    /// before it, and a later piece takes a new place after it).
    var handOffPlace = HandOffPlace()
    var handOff: LoopHandOff { loop.toConnections }
    var onDrain: (() -> Void)?
    var onClose: (() -> Void)?

    init(relay: HTTPStreamRelay, loop: ConnectionLoop) {
        self.relay = relay
        self.figures = relay.figures
        self.loop = loop
    }

    func start(status: Int, contentType: String, headers: [HTTPResponse.Header]) {
        let relay = self.relay
        handAfterPending { [self] in relay.start(self, status: status, contentType: contentType, headers: headers) }
    }

    func append(_ build: (inout [UInt8]) -> Void) {
        build(&pending)
        didQueue(pendingBytes: pending.count, eagerBytes: HTTPStreamChannels.eagerWriteBytes, promptBytes: loop.promptWriteSize)
    }

    func end(closingConnection: Bool) {
        let relay = self.relay
        handAfterPending { relay.end(closingConnection: closingConnection) }
    }

    var queuedBytes: Int {
        pending.count + figures.inTransit.load(ordering: .relaxed) + figures.queued.load(ordering: .relaxed)
    }

    /// The exchange's queue drained (from the connection loop).
    func drained() {
        onDrain?()
    }

    /// The peer closed (from the connection loop).
    func closed() {
        pending = []
        onClose?()
    }

    /// The work that writes ``pending`` on the connection loop.
    func takePendingWork() -> (() -> Void)? {
        guard !pending.isEmpty else { return nil }
        let body = pending
        pending = []
        pending.reserveCapacity(min(body.count, HTTPStreamChannels.eagerWriteBytes))
        figures.inTransit.add(body.count, ordering: .relaxed)
        let relay = self.relay
        return { relay.write(body) }
    }
}

/// The connection loop's side of a streamed answer to a request the hub's loop serves:
/// it writes what the hub's loop hands over and tells it of drains and the close.
/// Confined to its connection loop; it holds the hub's side only to pass it back.
final class HTTPStreamRelay: HTTPExchangeHandler {
    /// The stream's bytes as both loops see them.
    final class Figures: Sendable {
        /// Bytes handed to the connection loop and not yet queued there.
        let inTransit = Atomic<Int>(0)
        /// Bytes queued on the exchange and not yet handed to the socket.
        let queued = Atomic<Int>(0)
    }

    let figures = Figures()
    let exchange: HTTPExchange
    private let toHub: LoopHandOff
    private var hubSide: RelayedHTTPStream?

    init(exchange: HTTPExchange, toHub: LoopHandOff) {
        self.exchange = exchange
        self.toHub = toHub
    }

    func start(_ hubSide: RelayedHTTPStream, status: Int, contentType: String, headers: [HTTPResponse.Header]) {
        self.hubSide = hubSide
        exchange.handler = self
        if !exchange.startStreaming(status: status, contentType: contentType, headers: headers) {
            self.hubSide = nil
            toHub.post { hubSide.closed() }
        }
    }

    func write(_ bytes: [UInt8]) {
        exchange.write(bytes)
        figures.inTransit.subtract(bytes.count, ordering: .relaxed)
        figures.queued.store(exchange.queuedBytes, ordering: .relaxed)
    }

    func end(closingConnection: Bool) {
        exchange.endStream(closingConnection: closingConnection)
        hubSide = nil
    }

    func exchangeDidDrain(_ exchange: HTTPExchange) {
        figures.queued.store(exchange.queuedBytes, ordering: .relaxed)
        guard let hubSide else { return }
        toHub.post { hubSide.drained() }
    }

    func exchangeDidClose(_ exchange: HTTPExchange) {
        figures.queued.store(0, ordering: .relaxed)
        guard let hubSide = hubSide.take() else { return }
        toHub.post { hubSide.closed() }
    }
}
