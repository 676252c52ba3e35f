/// A plain HTTP request that arrived on a ``WebSocketServer``'s port (not an upgrade).
///
/// The server has parsed it (``HTTPRequestParser``) and read its body; it hands it to its
/// delegate inside an ``HTTPExchange``, which is answered with an ``HTTPResponse`` or a
/// streamed response.
public struct HTTPRequest: Sendable, Hashable {
    /// The request method as sent (`GET`, `POST`, `HEAD`, ...; methods are case-sensitive).
    public var method: String
    /// The path, without the query (for example `/metrics`), percent-decoded.
    public var path: String
    /// The query's `name=value` pairs in order (a bare `name` has an empty value),
    /// percent-decoded, `+` read as a space.
    public var query: [QueryItem]
    /// The `Authorization` header, if present.
    public var authorization: String?
    /// The peer's address, if known (for logs).
    public var peer: String?
    /// The header fields in the order sent, names lower-cased.
    public var headers: [Header]
    /// The body (empty when none was sent), at most the server's
    /// ``WebSocketServer/Configuration/maximumRequestBodySize``.
    public var body: [UInt8]
    /// The protocol version, `HTTP/1.1` or `HTTP/1.0`.
    public var version: String

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

    /// One header field.
    public struct Header: Sendable, Hashable {
        /// The name, lower case.
        public var name: String
        /// The value, without surrounding blanks.
        public var value: String

        /// A field.
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// A request.
    public init(
        method: String, path: String, query: [QueryItem] = [], authorization: String? = nil, peer: String? = nil,
        headers: [Header] = [], body: [UInt8] = [], version: String = "HTTP/1.1"
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.authorization = authorization
        self.peer = peer
        self.headers = headers
        self.body = body
        self.version = version
    }

    /// The value of the first query item named `name`.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// The value of the first header field named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name == lowered }?.value
    }

    /// The first non-empty value of the cookie `name` in the `Cookie` header fields
    /// (RFC 6265 §5.4: `name=value` pairs separated by `;`; a value in double quotes is
    /// taken without them), or `nil`. Names are case-sensitive.
    public func cookie(_ name: String) -> String? {
        for header in headers where header.name == "cookie" {
            for pair in header.value.split(separator: ";") {
                guard let equals = pair.firstIndex(of: "="), pair[..<equals].trimmingBlanks() == name else { continue }
                var value = Substring(pair[pair.index(after: equals)...].trimmingBlanks())
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = value.dropFirst().dropLast() }
                if !value.isEmpty { return String(value) }
            }
        }
        return nil
    }
}
