/// The request line and header fields of one HTTP/1.x request, as ``HTTPRequestParser``
/// read them, with what they say about the body, the connection and an upgrade.
struct HTTPRequestHead: Equatable, Sendable {
    /// The method, as sent (methods are case-sensitive: `GET`, `POST`, ...).
    var method: String
    /// The request target as sent (origin form `/path?query`, `*`, or absolute form).
    var target: String
    /// The minor version of HTTP/1.x (0 or 1).
    var minorVersion: Int
    /// The header fields in order, names lower-cased, values without surrounding blanks.
    var headers: [HTTPRequest.Header]

    /// How the body is delimited.
    enum BodyFraming: Equatable, Sendable {
        /// No body.
        case none
        /// `Content-Length` bytes.
        case length(Int)
        /// `Transfer-Encoding: chunked`.
        case chunked
    }

    /// How the body is delimited (set by the parser once the head is complete).
    var bodyFraming: BodyFraming = .none

    /// The value of the first field named `name` (lower case).
    func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// Every value of the fields named `name`, comma-separated lists split, trimmed and
    /// lower-cased (for tokens such as `Connection` and `Upgrade`).
    func tokens(_ name: String) -> [String] {
        var tokens: [String] = []
        for field in headers where field.name == name {
            for token in field.value.split(separator: ",") {
                let trimmed = token.trimmingBlanks().lowercased()
                if !trimmed.isEmpty { tokens.append(trimmed) }
            }
        }
        return tokens
    }

    /// Whether the connection stays open after the response: HTTP/1.1 unless the client
    /// sent `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    var keepsAlive: Bool {
        let connection = tokens("connection")
        if minorVersion >= 1 { return !connection.contains("close") }
        return connection.contains("keep-alive")
    }

    /// Whether the client waits for `100 Continue` before sending its body.
    var expectsContinue: Bool {
        minorVersion >= 1 && header("expect")?.lowercased() == "100-continue"
    }

    /// Whether this is a WebSocket upgrade request (`Upgrade: websocket` and a
    /// `Connection` that names `upgrade`): the server answers it with 101 or an error.
    var asksForWebSocket: Bool {
        tokens("upgrade").contains("websocket") && tokens("connection").contains("upgrade")
    }

    /// The path part of the target (before `?`), percent-decoded; `nil` when it does not
    /// decode (a bad escape, or `%00`). Absolute-form targets give their path.
    var path: String? {
        var raw = Substring(target)
        if let scheme = raw.range(of: "://"), raw[..<scheme.lowerBound].allSatisfy({ $0.isLetter }) {
            let afterAuthority = raw[scheme.upperBound...]
            raw = afterAuthority.firstIndex(of: "/").map { afterAuthority[$0...] } ?? "/"
        }
        if let question = raw.firstIndex(of: "?") { raw = raw[..<question] }
        if raw.isEmpty { raw = "/" }
        return HTTPRequestHead.percentDecoded(raw, plusIsSpace: false)
    }

    /// The query's `name=value` pairs, percent-decoded (`+` as a space); undecodable
    /// pairs are kept as they are.
    var query: [HTTPRequest.QueryItem] {
        guard let question = target.firstIndex(of: "?") else { return [] }
        var items: [HTTPRequest.QueryItem] = []
        for pair in target[target.index(after: question)...].split(separator: "&", omittingEmptySubsequences: true) {
            let name: Substring, value: Substring
            if let equals = pair.firstIndex(of: "=") {
                name = pair[..<equals]
                value = pair[pair.index(after: equals)...]
            } else {
                name = pair
                value = ""
            }
            items.append(HTTPRequest.QueryItem(
                name: HTTPRequestHead.percentDecoded(name, plusIsSpace: true) ?? String(name),
                value: HTTPRequestHead.percentDecoded(value, plusIsSpace: true) ?? String(value)))
        }
        return items
    }

    /// `text` with its `%XX` escapes decoded (and `+` as a space when asked); `nil` for a
    /// malformed escape, a NUL byte, or bytes that are not UTF-8.
    static func percentDecoded(_ text: Substring, plusIsSpace: Bool) -> String? {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                let decoded = high << 4 | low
                guard decoded != 0 else { return nil }
                bytes.append(decoded)
            case UInt8(ascii: "+") where plusIsSpace:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    func trimmingBlanks() -> String {
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return "" }
        let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })!
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
