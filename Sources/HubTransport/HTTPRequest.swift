/// A plain HTTP request that arrived on a ``WebSocketServer``'s port (not an upgrade).
///
/// libwebsockets has parsed it; the server hands it to its delegate inside an
/// ``HTTPExchange``, which is answered with an ``HTTPResponse``.
public struct HTTPRequest: Sendable, Hashable {
    /// The request method in capitals (`GET`, `POST`, `HEAD`, ...).
    public var method: String
    /// The path, without the query (for example `/metrics`); percent-decoded by lws.
    public var path: String
    /// The query's `name=value` pairs in order (a bare `name` has an empty value).
    public var query: [QueryItem]
    /// The `Authorization` header, if present.
    public var authorization: String?
    /// The peer's address, if known (for logs).
    public var peer: String?

    /// One `name=value` pair of the query.
    public struct QueryItem: Sendable, Hashable {
        /// The name.
        public var name: String
        /// The value (empty for a bare name).
        public var value: String

        /// A pair.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// A request.
    public init(method: String, path: String, query: [QueryItem] = [], authorization: String? = nil, peer: String? = nil) {
        self.method = method
        self.path = path
        self.query = query
        self.authorization = authorization
        self.peer = peer
    }

    /// The value of the first query item named `name`.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }
}
