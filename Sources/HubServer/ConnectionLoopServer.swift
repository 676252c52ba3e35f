import HubLoop
import HubTransport

/// The server of a connection loop (see ``ConnectionLoop``): it serves the sockets the
/// hub's loop accepted and handed it, pairs each connection with its session's side on
/// the hub's loop (``ConnectionRelay`` and ``RelayedSession``), and has the hub's loop
/// answer its plain HTTP requests.
/// Confined to its connection loop.
final class ConnectionLoopServer: WebSocketServerDelegate {
    /// The loop's WebSocket server (it holds this delegate; the loop keeps it).
    private(set) weak var server: WebSocketServer?
    /// Work for the hub's loop, handed over at the end of each pass of this one.
    let toHub: LoopHandOff
    /// The hub's side of the loop: only passed along in the work handed to the hub's loop.
    private let hubSide: LoopBound<ConnectionLoop>
    /// Probes how late the loop runs a timer, for `/metrics`.
    private var lagMonitor: LoopLagMonitor?

    private init(toHub: LoopHandOff, hubSide: LoopBound<ConnectionLoop>) {
        self.toHub = toHub
        self.hubSide = hubSide
    }

    /// Starts a server with `configuration` on `eventLoop` (on its thread), which hands
    /// its connections to `hubSide` on `hubLoop` (the hub's), and the loop's lag probe,
    /// which notes into `lag`.
    ///
    /// - Throws: ``TransportError`` when it cannot listen.
    static func start(
        on eventLoop: EventLoop, configuration: WebSocketServer.Configuration, hubLoop: EventLoop,
        hubSide: LoopBound<ConnectionLoop>, lag: LoopLagMonitor.SharedMaximum
    ) throws -> LoopBound<ConnectionLoopServer> {
        let delegate = ConnectionLoopServer(toHub: LoopHandOff(from: eventLoop, to: hubLoop), hubSide: hubSide)
        let server = WebSocketServer(eventLoop: eventLoop, configuration: configuration, delegate: delegate)
        delegate.server = server
        try server.start()
        let monitor = LoopLagMonitor(scheduler: EventLoopScheduler(eventLoop: eventLoop), shared: lag)
        monitor.start()
        delegate.lagMonitor = monitor
        return LoopBound(delegate, eventLoop: eventLoop)
    }

    func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
        let relay = ConnectionRelay(connection: connection, toHub: toHub)
        relay.attach(RelayedSession(relay: relay, loop: hubSide))
        connection.handler = relay
    }

    func server(_ server: WebSocketServer, didReceive exchange: HTTPExchange) {
        let request = exchange.request
        let hubSide = self.hubSide
        let relay = HTTPStreamRelay(exchange: exchange, toHub: toHub)
        toHub.post {
            hubSide.value.serve(request, relay: relay)
        }
    }
}
