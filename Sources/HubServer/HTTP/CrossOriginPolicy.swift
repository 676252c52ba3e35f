import HubTransport

/// Which other origins' pages may call the HTTP API from a browser (configuration
/// `http.cors.origins`): none by default, so a browser keeps a page of another origin
/// from reading the answers. An allowed origin's requests get
/// `Access-Control-Allow-Origin` (and `Vary: Origin`) on every answer and event stream
/// under `/v1/`, and its preflight (`OPTIONS` with `Access-Control-Request-Method`) a
/// `204` that allows the API's methods and the headers it reads (`Authorization`,
/// `Content-Type`, `Last-Event-ID`, `If-None-Match`). A preflight from any other
/// origin gets `403` with the reason.
///
/// An origin listed by name (not through `*`) is also allowed credentials
/// (`Access-Control-Allow-Credentials: true`): its `EventSource`s may send the
/// `hub_token` cookie (``SSERequestHandler/credentials(of:)``), which nothing but an
/// event stream takes.
///
/// CORS only tells a browser what a page may read: the tokens and permissions still
/// decide what a request may do.
public struct CrossOriginPolicy: Sendable, Hashable {
    /// The allowed origins, each `scheme://host[:port]` as a browser sends it in
    /// `Origin`, or `*` for any.
    public var origins: [String]

    /// No origin but the API's own (the default).
    public static let sameOriginOnly = CrossOriginPolicy(origins: [])

    /// A policy allowing `origins` (`*`: any).
    public init(origins: [String]) {
        self.origins = origins
    }

    /// Why `origin` cannot be in the list, or `nil` when it can: an origin is `*`, or a
    /// scheme, `://` and a host with an optional port, without a path, a query or a
    /// trailing slash (what browsers send in `Origin`).
    public static func problem(with origin: String) -> String? {
        if origin == "*" { return nil }
        guard let range = origin.range(of: "://") else {
            return "expected an origin such as https://app.example.com (scheme://host[:port]) or *"
        }
        let scheme = origin[..<range.lowerBound]
        let authority = origin[range.upperBound...]
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else {
            return "expected a scheme before '://'"
        }
        guard !authority.isEmpty, !authority.contains(where: { "/?#@ ".contains($0) }) else {
            return "expected a host (and an optional port) after '://', with no path, query or trailing slash"
        }
        return nil
    }

    /// Whether this policy lets pages of other origins in at all.
    var isEnabled: Bool { !origins.isEmpty }

    /// The `Access-Control-Allow-Origin` value for a request from `origin`, or `nil`
    /// when that origin is not allowed (or the request has none).
    func allowedOrigin(_ origin: String?) -> String? {
        guard let origin, isEnabled else { return nil }
        if origins.contains("*") { return "*" }
        return origins.contains(origin) ? origin : nil
    }

    /// The headers every answer to `request` carries: the allowed origin, that answers
    /// vary by it, and the headers a page may read.
    func headers(for request: HTTPRequest) -> [HTTPResponse.Header] {
        guard isEnabled else { return [] }
        guard let allowed = allowedOrigin(request.header("origin")) else {
            return [.init("vary", "Origin")]
        }
        return [
            .init("access-control-allow-origin", allowed),
            .init("access-control-expose-headers", "ETag, Retry-After"),
            .init("vary", "Origin"),
        ] + Self.credentials(allowed)
    }

    /// `Access-Control-Allow-Credentials` for an origin allowed by name; a browser never
    /// sends credentials where any origin is (`*`).
    private static func credentials(_ allowed: String) -> [HTTPResponse.Header] {
        allowed == "*" ? [] : [.init("access-control-allow-credentials", "true")]
    }

    /// Whether `request` is a preflight: `OPTIONS` asking for a method.
    static func isPreflight(_ request: HTTPRequest) -> Bool {
        request.method == "OPTIONS" && request.header("access-control-request-method") != nil
    }

    /// The answer to a preflight.
    func preflight(_ request: HTTPRequest) -> HTTPResponse {
        let origin = request.header("origin")
        guard let allowed = allowedOrigin(origin) else {
            let reason = isEnabled
                ? "the origin '\(origin ?? "")' is not in http.cors.origins"
                : "this server allows no other origin (http.cors.origins is not set)"
            return APIResponse.json(403, APIErrorStatus.body(code: "forbidden", reason), headers: headers(for: request))
        }
        return HTTPResponse(
            status: 204, contentType: "text/plain; charset=utf-8",
            headers: [
                .init("access-control-allow-origin", allowed),
                .init("access-control-allow-methods", "GET, HEAD, POST, DELETE"),
                .init("access-control-allow-headers", "Authorization, Content-Type, Last-Event-ID, If-None-Match"),
                .init("access-control-max-age", "600"),
                .init("vary", "Origin"),
            ] + Self.credentials(allowed),
            body: [])
    }

    /// `reply` with this policy's headers on its answer or its stream's head.
    func decorate(_ reply: HTTPReply, for request: HTTPRequest) -> HTTPReply {
        let headers = headers(for: request)
        guard !headers.isEmpty else { return reply }
        return HTTPReply(
            respond: { response in
                var response = response
                response.headers += headers
                reply.respond(response)
            },
            stream: { HeaderAddingStream(reply.stream(), headers: headers) })
    }
}

/// A stream whose head carries some headers more.
private final class HeaderAddingStream: HTTPStreamChannel {
    private let inner: any HTTPStreamChannel
    private let headers: [HTTPResponse.Header]

    init(_ inner: any HTTPStreamChannel, headers: [HTTPResponse.Header]) {
        self.inner = inner
        self.headers = headers
    }

    func start(status: Int, contentType: String, headers: [HTTPResponse.Header]) {
        inner.start(status: status, contentType: contentType, headers: headers + self.headers)
    }

    func append(_ build: (inout [UInt8]) -> Void) { inner.append(build) }
    func end(closingConnection: Bool) { inner.end(closingConnection: closingConnection) }
    var queuedBytes: Int { inner.queuedBytes }
    var onDrain: (() -> Void)? {
        get { inner.onDrain }
        set { inner.onDrain = newValue }
    }
    var onClose: (() -> Void)? {
        get { inner.onClose }
        set { inner.onClose = newValue }
    }
}
