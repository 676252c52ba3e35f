/// Decides about and receives the connections of a ``WebSocketServer``, on the loop thread.
public protocol WebSocketServerDelegate: AnyObject {
    /// Whether to accept an upgrade request (path and `Authorization` header are known).
    /// Returning `false` refuses the handshake. Defaults to `true`.
    func server(_ server: WebSocketServer, shouldAccept request: WebSocketUpgradeRequest) -> Bool

    /// A connection opened: set its ``WebSocketConnection/handler`` here. Its
    /// `connectionDidOpen` follows.
    func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection)
}

extension WebSocketServerDelegate {
    /// Accepts every request.
    public func server(_ server: WebSocketServer, shouldAccept request: WebSocketUpgradeRequest) -> Bool { true }
}
