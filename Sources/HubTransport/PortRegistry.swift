/// The ports an event loop's servers listen on, and whether one of them serves the
/// sockets another loop hands it.
///
/// lws would silently share one listening socket between vhosts of one context that ask
/// for the same port: the loop refuses the second server instead. Likewise for servers
/// of handed-over sockets: lws gives them all the same port (and, in its http role,
/// bound each connection to the first vhost of the context on that port, whichever
/// server adopted it; raw sockets stay with theirs, but one such server a loop is all
/// the broker needs). Loop-confined.
struct PortRegistry {
    private var ports: Set<Int> = []
    private var servesHandedOverSockets = false

    init() {}

    /// Whether a server of the loop listens on `port`.
    func contains(_ port: Int) -> Bool {
        ports.contains(port)
    }

    /// Throws `listen_failed` when another server of the loop listens on `port` (`0`,
    /// an ephemeral port, is always available).
    func checkAvailable(_ port: Int) throws(TransportError) {
        guard port == 0 || !ports.contains(port) else {
            throw TransportError(code: .listenFailed, message: "another server of this event loop listens on \(port)")
        }
    }

    /// Records that a server listens on `port` (the bound one).
    mutating func register(_ port: Int) {
        ports.insert(port)
    }

    /// Throws `listen_failed` when a server of the loop serves handed-over sockets already.
    func checkHandedOverSocketsAvailable() throws(TransportError) {
        guard !servesHandedOverSockets else {
            throw TransportError(code: .listenFailed, message: "another server of this event loop serves handed-over sockets")
        }
    }

    /// Records that a server of the loop serves handed-over sockets.
    mutating func registerHandedOverSockets() {
        servesHandedOverSockets = true
    }
}
