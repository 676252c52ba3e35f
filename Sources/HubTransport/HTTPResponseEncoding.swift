/// The bytes of HTTP/1.1 responses the server writes itself: status lines, header
/// sections (with how the body is delimited and whether the connection stays open), and
/// the framing of chunked bodies.
enum HTTPResponseEncoding {
    /// How a response's body is delimited.
    enum BodyFraming: Equatable {
        /// `content-length` (sent for `HEAD` too, with no body).
        case length(Int)
        /// `transfer-encoding: chunked` (HTTP/1.1 streams).
        case chunked
        /// Until the connection closes (HTTP/1.0 streams).
        case untilClose
    }

    /// The status line and header section of a response.
    static func head(
        status: Int, contentType: String?, headers: [HTTPResponse.Header], framing: BodyFraming, keepsAlive: Bool
    ) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        if let contentType { text += "content-type: \(contentType)\r\n" }
        switch framing {
        case .length(let length): text += "content-length: \(length)\r\n"
        case .chunked: text += "transfer-encoding: chunked\r\n"
        case .untilClose: break
        }
        text += keepsAlive ? "connection: keep-alive\r\n" : "connection: close\r\n"
        for header in headers where isSafe(header.name) && isSafe(header.value) {
            text += "\(header.name): \(header.value)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// Appends one chunk of a chunked body (`size CRLF data CRLF`).
    static func appendChunk(_ data: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        guard !data.isEmpty else { return }
        output.append(contentsOf: String(data.count, radix: 16).utf8)
        output.append(contentsOf: [0x0D, 0x0A])
        output.append(contentsOf: data)
        output.append(contentsOf: [0x0D, 0x0A])
    }

    /// The last chunk of a chunked body (no trailers).
    static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

    /// The interim answer to `Expect: 100-continue`.
    static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// A header name or value that cannot split the header section (no CR or LF).
    private static func isSafe(_ text: String) -> Bool {
        !text.utf8.contains { $0 == 0x0D || $0 == 0x0A }
    }

    /// The reason phrase of `status` (RFC 9110's, or a generic one).
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 426: return "Upgrade Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default:
            switch status / 100 {
            case 1: return "Informational"
            case 2: return "Success"
            case 3: return "Redirection"
            case 4: return "Client Error"
            default: return "Server Error"
            }
        }
    }
}
