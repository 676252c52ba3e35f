/// Decides about and receives the connections of a ``WebSocketServer``, on the loop thread.
public protocol WebSocketServerDelegate: AnyObject {
    /// Whether to accept an upgrade request (path and `Authorization` header are known).
    /// Returning `false` refuses the handshake. Defaults to `true`.
    func server(_ server: WebSocketServer, shouldAccept request: WebSocketUpgradeRequest) -> Bool

    /// A connection opened: set its ``WebSocketConnection/handler`` here. Its
    /// `connectionDidOpen` follows.
    func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection)

    /// A plain HTTP request (not an upgrade) arrived on the server's port: answer it with
    /// ``HTTPExchange/respond(_:)``, now or later on the loop. Defaults to 404.
    func server(_ server: WebSocketServer, didReceive exchange: HTTPExchange)
}

extension WebSocketServerDelegate {
    /// Accepts every request.
    public func server(_ server: WebSocketServer, shouldAccept request: WebSocketUpgradeRequest) -> Bool { true }

    /// Answers 404 Not Found.
    public func server(_ server: WebSocketServer, didReceive exchange: HTTPExchange) {
        exchange.respond(.notFound(exchange.request.path))
    }
}
