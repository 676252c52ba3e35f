/// The answer to an ``HTTPRequest``: a status, a content type, extra headers and a
/// body held in memory (sent with a `content-length`).
public struct HTTPResponse: Sendable, Hashable {
    /// The status code (200, 404, 503, ...).
    public var status: Int
    /// The `content-type` header.
    public var contentType: String
    /// Extra headers, as (lower-case name, value) pairs.
    public var headers: [Header]
    /// The body.
    public var body: [UInt8]

    /// One extra header.
    public struct Header: Sendable, Hashable {
        /// The name, lower case, without the colon (for example `cache-control`).
        public var name: String
        /// The value.
        public var value: String

        /// A header.
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// A response with `body` bytes.
    public init(status: Int, contentType: String, headers: [Header] = [], body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }

    /// A response with a UTF-8 text body.
    public init(status: Int, contentType: String = "text/plain; charset=utf-8", headers: [Header] = [], text: String) {
        self.init(status: status, contentType: contentType, headers: headers, body: Array(text.utf8))
    }

    /// `404 Not Found` with a one-line text body naming `path`.
    public static func notFound(_ path: String) -> HTTPResponse {
        HTTPResponse(status: 404, text: "not found: \(path)\n")
    }
}
