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
