/// An HTTP API request as its method and path name it (`Protocol/HTTP.md`):
///
/// | method and path | operation |
/// |---|---|
/// | `POST /v1/subjects/{name}` | `send` (a JSON value, or NDJSON values) |
/// | `GET`/`HEAD /v1/subjects/{name}` | the subject's latest value |
/// | `DELETE /v1/subjects/{name}` | `delete` |
/// | `POST /v1/subjects/{name}/complete` | `complete` |
/// | `POST /v1/subjects/{name}/fail` | `fail` (body: the error) |
/// | `POST /v1/triggers/{name}` | `trigger` (body: the key, or none) |
/// | `GET`/`HEAD /v1/catalog` | `list` |
/// | `GET /v1/subjects/{name}/events` | `subscribe`, as Server-Sent Events |
/// | `GET /v1/pipelines/{name}/events`, `GET /v1/triggers/{name}/events` | the same |
/// | `GET /v1/events?pipeline=TEXT` | `subscribe` to an ad-hoc pipeline, as Server-Sent Events |
/// | `GET`/`HEAD /v1/openapi.json` | the API's OpenAPI document (Protocol/openapi.json) |
///
/// Only the shape is read here; the name is checked by the operation, as over WebSocket.
enum APIRoute: Equatable {
    case publish(subject: String)
    case latest(subject: String)
    case delete(subject: String)
    case complete(subject: String)
    case fail(subject: String)
    case trigger(name: String)
    case catalog
    case events(EventsTarget)
    case openAPI

    /// What an event stream subscribes to.
    enum EventsTarget: Equatable {
        case subject(String)
        case pipeline(String)
        case trigger(String)
        /// The pipeline text of the `pipeline` query parameter.
        case adHoc
    }

    /// What a request's method and path make.
    enum Match: Equatable {
        /// An operation of the API.
        case route(APIRoute)
        /// A path outside `/v1/`: not the API's.
        case notAPI
        /// A path under `/v1/` that names nothing.
        case notFound
        /// A path of the API that takes other methods: those, for `Allow`.
        case methodNotAllowed(allowed: [String])
    }

    /// The API's prefix.
    static let prefix = "/v1/"

    /// The route of `method` on `path` (percent-decoded, without the query).
    static func match(method: String, path: String) -> Match {
        guard path.hasPrefix(prefix) else { return .notAPI }
        let parts = path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        let reads = ["GET", "HEAD"]
        switch (parts.first, parts.count) {
        case ("events", 1):
            return method == "GET" ? .route(.events(.adHoc)) : .methodNotAllowed(allowed: ["GET"])
        case ("subjects", 3), ("pipelines", 3), ("triggers", 3):
            guard !parts[1].isEmpty, parts[2] == "events" || parts[0] == "subjects" else { return .notFound }
            if parts[2] == "events" {
                guard method == "GET" else { return .methodNotAllowed(allowed: ["GET"]) }
                let name = String(parts[1])
                switch parts[0] {
                case "subjects": return .route(.events(.subject(name)))
                case "pipelines": return .route(.events(.pipeline(name)))
                default: return .route(.events(.trigger(name)))
                }
            }
            guard parts[2] == "complete" || parts[2] == "fail" else { return .notFound }
            guard method == "POST" else { return .methodNotAllowed(allowed: ["POST"]) }
            let name = String(parts[1])
            return .route(parts[2] == "complete" ? .complete(subject: name) : .fail(subject: name))
        case ("catalog", 1):
            return reads.contains(method) ? .route(.catalog) : .methodNotAllowed(allowed: reads)
        case ("openapi.json", 1):
            return reads.contains(method) ? .route(.openAPI) : .methodNotAllowed(allowed: reads)
        case ("subjects", 2) where !parts[1].isEmpty:
            let name = String(parts[1])
            switch method {
            case "POST": return .route(.publish(subject: name))
            case "GET", "HEAD": return .route(.latest(subject: name))
            case "DELETE": return .route(.delete(subject: name))
            default: return .methodNotAllowed(allowed: ["GET", "HEAD", "POST", "DELETE"])
            }
        case ("triggers", 2) where !parts[1].isEmpty:
            guard method == "POST" else { return .methodNotAllowed(allowed: ["POST"]) }
            return .route(.trigger(name: String(parts[1])))
        default:
            return .notFound
        }
    }
}
