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

/// What a server knows of an upgrade request before accepting it.
public struct WebSocketUpgradeRequest: Sendable, Hashable {
    /// The request path (for example `/`).
    public var path: String
    /// The `Authorization` header, if present.
    public var authorization: String?

    /// Creates a request description.
    public init(path: String, authorization: String?) {
        self.path = path
        self.authorization = authorization
    }
}
