import HubTransport
import HubValue

/// The JSON answers of the HTTP API: never cached, never sniffed.
enum APIResponse {
    /// `status` with `value` as its JSON body.
    static func json(_ status: Int, _ value: Value, headers: [HTTPResponse.Header] = []) -> HTTPResponse {
        var body: [UInt8] = []
        value.writeJSON(into: &body)
        body.append(UInt8(ascii: "\n"))
        return HTTPResponse(
            status: status, contentType: "application/json",
            headers: [.init("cache-control", "no-store"), .init("x-content-type-options", "nosniff")] + headers,
            body: body)
    }

    /// `404` for a path under `/v1/` that names nothing.
    static func notFound(_ path: String) -> HTTPResponse {
        json(404, APIErrorStatus.body(code: "not_found", "no endpoint at \(path)"))
    }
}
