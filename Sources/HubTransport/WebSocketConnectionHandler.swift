/// Receives the events of one ``WebSocketConnection``, on the loop thread.
///
/// The connection holds its handler strongly and lets it go after the close event.
public protocol WebSocketConnectionHandler: AnyObject {
    /// The handshake finished; messages can be sent.
    func connectionDidOpen(_ connection: WebSocketConnection)

    /// A complete message arrived (fragments and lws's receive chunks reassembled).
    ///
    /// `payload` is only valid during the call: copy what must outlive it.
    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind)

    /// The outbound queue became empty (every queued byte was handed to the socket).
    func connectionDidDrainOutbound(_ connection: WebSocketConnection)

    /// The connection closed. `code` is the peer's close code, or the one this side sent,
    /// or `nil` when the connection ended without a close frame.
    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String)

    /// A client connection could not be established (never opened). No close event follows.
    func connection(_ connection: WebSocketConnection, didFailToConnect error: TransportError)
}

extension WebSocketConnectionHandler {
    /// Does nothing.
    public func connectionDidOpen(_ connection: WebSocketConnection) {}
    /// Does nothing.
    public func connectionDidDrainOutbound(_ connection: WebSocketConnection) {}
    /// Does nothing.
    public func connection(_ connection: WebSocketConnection, didFailToConnect error: TransportError) {}
}
