import HubTransport
import HubValue
import HubWire

/// The HTTP status of each of the protocol's error codes, and the JSON answer of an
/// error: `{"code": "forbidden", "message": "...", "data": ...}` (`data` when the
/// error has it), the body a client reads whatever the status.
enum APIErrorStatus {
    /// The status for `error`.
    static func status(for error: HubError) -> Int {
        switch error.code {
        case .badMessage, .unknownOp, .duplicateId, .invalidDemand, .pipelineError, .invalidValue:
            return 400
        case .unauthorized:
            return 401
        case .forbidden:
            return 403
        case .notFound:
            return 404
        case .completed, .failed:
            return 409
        case .limitExceeded:
            // The service at its connection limit is unavailable for now; any other limit
            // (a rate, an identity's connections, a table's room) is the client's.
            if case .object(let data)? = error.data, data["limit"] == .string("maxConnections") { return 503 }
            return 429
        case .overflow, .storageUnavailable, .shuttingDown:
            return 503
        case .internal:
            return 500
        }
    }

    /// The answer for `error`: its status, its JSON body, and the headers that go with
    /// the status (`WWW-Authenticate` with 401, `Retry-After` with 429 and 503).
    static func response(for error: HubError) -> HTTPResponse {
        let status = status(for: error)
        var headers: [HTTPResponse.Header] = []
        switch status {
        case 401: headers.append(.init("www-authenticate", "Bearer realm=\"hub\""))
        case 429, 503: headers.append(.init("retry-after", "1"))
        default: break
        }
        return APIResponse.json(status, body(of: error), headers: headers)
    }

    /// `405` for a path that takes only `allowed`.
    static func methodNotAllowed(_ method: String, allowed: [String]) -> HTTPResponse {
        APIResponse.json(
            405, body(code: "method_not_allowed", "\(method) is not allowed here; use \(allowed.joined(separator: ", "))"),
            headers: [.init("allow", allowed.joined(separator: ", "))])
    }

    /// `415` for a body of a type the endpoint does not read.
    static func unsupportedMediaType(_ type: String) -> HTTPResponse {
        APIResponse.json(
            415, body(code: "unsupported_media_type",
                      "a body of type '\(type)' is not read here: send application/json or application/x-ndjson"))
    }

    /// The JSON error object of `error`.
    static func body(of error: HubError) -> Value {
        var fields: Value.Object = ["code": .string(error.code.rawValue), "message": .string(error.message)]
        if let data = error.data { fields["data"] = data }
        return .object(fields)
    }

    /// The answer to a request that the transport refused before the API read it (a body
    /// larger than `limits.maxMessageBytes`, a head too large, a malformed request): the
    /// transport's status, with the error in the API's JSON form.
    static func transportRefusal(status: Int, reason: String) -> HTTPResponse {
        let error: HubError
        switch status {
        case 413: error = HubError(.limitExceeded, reason, data: ["limit": "maxMessageBytes"])
        case 414, 431: error = HubError(.limitExceeded, reason)
        default: error = HubError(.badMessage, reason)
        }
        return APIResponse.json(status, body(of: error), headers: [.init("cache-control", "no-store")])
    }

    /// A JSON error object with a code of HTTP's own (not one of the protocol's).
    static func body(code: String, _ message: String) -> Value {
        .object(["code": .string(code), "message": .string(message)])
    }
}
