/// What the service keeps of each connection's session, whichever loop serves the
/// connection: a ``SessionHandler`` on the hub's loop, or a ``RelayedSession`` for a
/// connection on another of the broker's loops. Confined to the hub's loop.
protocol SessionLink: AnyObject {
    /// The session, until the connection has closed.
    var session: Session? { get }
    /// The client's address.
    var peer: String? { get }
    /// When the connection opened (nanoseconds since the Unix epoch).
    var openedAt: Int64 { get }
    /// Payload bytes received so far.
    var bytesReceived: Int { get }
    /// Bytes written so far.
    var bytesSent: Int { get }
    /// Raw writes so far.
    var writeCalls: Int { get }
    /// Messages written so far.
    var messagesWritten: Int { get }
    /// Bytes queued for the client and not yet handed to its socket.
    var queuedBytes: Int { get }
}
