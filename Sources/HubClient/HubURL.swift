/// A parsed hub URL: `ws://host[:port][/path]` or `wss://host[:port][/path]`.
///
/// Parsed and validated by hand (no Foundation): the scheme must be `ws` or
/// `wss` (TLS), the host a name, an IPv4 address or a bracketed IPv6 address,
/// the port 1...65535 (default 80 for `ws`, 443 for `wss`), the path (default
/// `/`) free of spaces and fragments. User info is refused.
public struct HubURL: Hashable, Sendable, CustomStringConvertible {
    /// Whether the URL is `wss://` (WebSocket over TLS).
    public var isSecure: Bool
    /// The host name or address (IPv6 without brackets).
    public var host: String
    /// The TCP port.
    public var port: Int
    /// The request path, starting with `/` (a query is kept in it).
    public var path: String

    /// A URL from its parts (`wss://` when `isSecure`).
    public init(host: String, port: Int, path: String = "/", isSecure: Bool = false) {
        self.isSecure = isSecure
        self.host = host
        self.port = port
        self.path = path.hasPrefix("/") ? path : "/" + path
    }

    /// Parses `text`.
    ///
    /// - Throws: ``HubClientError`` with code `invalid_url` whose message names the
    ///   offending part (scheme, host, port, path).
    public init(parsing text: String) throws(HubClientError) {
        func bad(_ part: String) -> HubClientError {
            HubClientError(code: .invalidURL, message: "invalid URL '\(text)': \(part)")
        }
        guard let schemeEnd = text.range(of: "://") else {
            throw bad("missing scheme (expected ws://host:port/path or wss://host:port/path)")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "ws" || scheme == "wss" else {
            throw bad("scheme '\(scheme)' is not supported; use ws:// or wss://")
        }
        let isSecure = scheme == "wss"
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = String(rest[authorityEnd...])
        if path.contains("#") { throw bad("fragment '#…' is not allowed in a WebSocket URL") }
        if path.isEmpty { path = "/" } else if path.hasPrefix("?") { path = "/" + path }
        if let invalid = path.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value == 0x7F || $0.value > 0x7E }) {
            throw bad("path '\(path)' contains an invalid character (U+\(String(invalid.value, radix: 16, uppercase: true)))")
        }
        if authority.contains("@") { throw bad("user information ('…@') is not supported; use --token") }
        guard !authority.isEmpty else { throw bad("missing host") }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw bad("unterminated IPv6 address in host") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw bad("unexpected '\(after)' after the IPv6 host") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw bad("host '[\(host)]' is not an IPv6 address")
            }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                host = authority
            }
            guard !host.isEmpty else { throw bad("missing host") }
            let allowed = host.unicodeScalars.allSatisfy { scalar in
                (scalar.value < 0x80) && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "." || scalar == "_")
            }
            guard allowed, !host.hasPrefix("-"), !host.hasPrefix(".") else {
                throw bad("host '\(host)' is not a valid host name or address")
            }
        }
        var port = isSecure ? 443 : 80
        if let portText {
            guard !portText.isEmpty else { throw bad("empty port after ':'") }
            guard portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber), let number = Int(portText),
                (1...65535).contains(number)
            else {
                throw bad("port '\(portText)' is not a number between 1 and 65535")
            }
            port = number
        }
        self.isSecure = isSecure
        self.host = String(host)
        self.port = port
        self.path = path
    }

    /// `host:port` (IPv6 hosts in brackets), as error messages name it.
    public var hostAndPort: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// `ws://host:port/path` or `wss://host:port/path`.
    public var description: String { "\(isSecure ? "wss" : "ws")://\(hostAndPort)\(path)" }
}
