/// The ports an event loop's servers listen on.
///
/// lws would silently share one listening socket between vhosts of one context that ask
/// for the same port: the loop refuses the second server instead. Loop-confined.
struct PortRegistry {
    private var ports: Set<Int> = []

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
}
