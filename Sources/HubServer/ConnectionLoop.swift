import HubLoop
import HubTransport

/// One of the broker's connection loops, as the hub's loop sees it: the loop, the
/// hand-off that carries work to it (message batches, closes, flow control, HTTP
/// answers), and its server once started (``ConnectionLoopServer``).
///
/// A broker with N event loops serves WebSocket on all of them: the hub's loop (which
/// owns every subject, pipeline and session, and listens) and N − 1 connection loops,
/// to which it hands the sockets it accepts in turn. A connection loop does a
/// connection's socket work (reads, WebSocket framing, TLS, writes); its session lives
/// on the hub's loop as a ``RelayedSession``. Confined to the hub's loop.
final class ConnectionLoop {
    /// The connection loop.
    let eventLoop: EventLoop
    /// Sessions' messages for the loop's connections, and closes and server changes after
    /// them, handed over when the hub's loop writes (at the end of a pass, or after a hold
    /// while a stream's writes wait).
    let toConnections: LoopHandOff
    /// Everything else for the loop, handed over at the end of each pass of the hub's:
    /// accepted sockets, flow control, HTTP answers.
    let control: LoopHandOff
    /// The service; it outlives its loops.
    private unowned let core: ServiceCore
    /// The loop's server, once started.
    private var server: LoopBound<ConnectionLoopServer>?
    /// Sessions of connections on this loop.
    private(set) var sessionCount = 0
    /// The loop's lag, as its own monitor measures it (``ConnectionLoopServer``).
    let lag = LoopLagMonitor.SharedMaximum()

    init(eventLoop: EventLoop, core: ServiceCore) {
        self.eventLoop = eventLoop
        self.core = core
        promptWriteSize = ServiceCore.connectionLimits(core.configuration).promptWriteSize
        // Messages for the loop's clients: they go when the hub's loop writes its own
        // connections (held back with them while a stream's writes wait, each session's
        // batch counting as a connection), and the connection loop writes them at the end
        // of its pass, not held back again.
        toConnections = LoopHandOff(from: core.eventLoop, to: eventLoop, carriesInput: false, handsOverWithWrites: true)
        control = LoopHandOff(from: core.eventLoop, to: eventLoop, carriesInput: false)
    }

    /// Whether the loop's server was started (or is being started): claimed once.
    private var serverClaimed = false

    /// Claims the start of the loop's server: `true` once, for the one caller that starts
    /// it. A second server on the loop would share the first's handed-over sockets with it
    /// (lws binds a connection to the first vhost of its context on the same port).
    func claimServerStart() -> Bool {
        guard !serverClaimed else { return false }
        serverClaimed = true
        return true
    }

    /// Keeps the loop's started server, for the changes the service hands it.
    func attach(_ server: LoopBound<ConnectionLoopServer>) {
        self.server = server
    }

    /// The bytes at which a relayed session's messages stop waiting for the hub loop's
    /// held writes: the connections' own (``ServiceCore/connectionLimits(_:)``), kept
    /// here for the delivery path and updated on reload.
    var promptWriteSize: Int

    /// Runs `change` on the loop's server, after the messages handed over before (a
    /// drain or a shutdown closes connections after what their sessions sent last): the
    /// hub's loop writes at the end of this pass.
    func onServer(_ change: @escaping (WebSocketServer) -> Void) {
        guard let server else { return }
        toConnections.post {
            if let running = server.value.server { change(running) }
        }
        toConnections.source.writeAtEndOfPass()
    }

    /// What hands an accepted socket to the loop's server; `nil` before the server has started.
    var socketTaker: ((AcceptedSocket) -> Void)? {
        guard let server else { return nil }
        return { [control] socket in
            control.post {
                if let running = server.value.server { running.adopt(socket) } else { socket.close() }
            }
        }
    }

    /// Records a connection that opened on the loop: returns what makes its session, or
    /// `nil` when the service no longer takes connections.
    func adopt(_ relayed: RelayedSession) -> SessionFactory? {
        guard let sessions = core.adopt(relayed) else { return nil }
        sessionCount += 1
        return sessions
    }

    /// Forgets a connection that closed.
    func forget(_ relayed: RelayedSession) {
        if core.forget(relayed) { sessionCount -= 1 }
    }

    /// Answers a plain HTTP request that arrived on the loop: the answer, or the stream's
    /// pieces, are written by `relay` on the connection loop.
    func serve(_ request: HTTPRequest, relay: HTTPStreamRelay) {
        let control = self.control
        core.serve(request, on: .main, reply: HTTPReply(
            respond: { response in control.post { relay.exchange.respond(response) } },
            stream: { [self] in RelayedHTTPStream(relay: relay, loop: self) }))
    }
}
