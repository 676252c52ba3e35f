import Glibc

/// A connected socket one server accepted and hands to a server on another loop
/// (``WebSocketServer/socketDistributor`` and ``WebSocketServer/adopt(_:)``): whoever
/// holds it serves it or closes it, once.
public struct AcceptedSocket: Sendable {
    /// The socket's descriptor.
    public let descriptor: Int32

    /// A duplicate of `descriptor` (close-on-exec), or `nil` when none can be made.
    init?(duplicating descriptor: Int32) {
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { return nil }
        self.descriptor = copy
    }

    /// A socket the server accepted itself (it owns `descriptor`).
    init(accepted descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Closes the socket (it was not served).
    public func close() {
        _ = Glibc.close(descriptor)
    }
}
