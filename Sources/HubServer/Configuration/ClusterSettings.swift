import Foundation

/// The `cluster` section of the configuration (or `hubcli serve --cluster`): the NATS
/// servers the broker joins its cluster through, and the node's name in it.
///
/// Without it the broker runs alone. The checks here are syntactic (a URL that cannot
/// be reached is not an error: the node keeps trying and reports not-ready).
public struct ClusterSettings: Hashable, Sendable {
    /// The NATS servers, `nats://HOST:PORT`, in the order given.
    public var urls: [String]
    /// The node's name (unique in the cluster); `nil`: ``defaultNodeName()``.
    public var node: String?
    /// Whether the node writes each value to NATS at once (lower latency, a system call
    /// per value on the loop) rather than leaving it to libnats's batching flusher.
    public var sendImmediately = false

    /// Settings for `urls`, with `node` if given.
    public init(urls: [String], node: String? = nil, sendImmediately: Bool = false) {
        self.urls = urls
        self.node = node
        self.sendImmediately = sendImmediately
    }

    /// The longest node name.
    public static let maxNodeNameLength = 64

    /// The node name used when none is given: the host's name and the process id.
    public static func defaultNodeName() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "node"
        let cleaned = String(host.unicodeScalars.filter { isNodeNameCharacter($0) }.map(Character.init).prefix(40))
        return "\(cleaned.isEmpty ? "node" : cleaned)-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// Why `name` cannot name a node (letters, digits, `_`, `-`, `.`; at most 64), or `nil`.
    public static func problem(withNodeName name: String) -> String? {
        if name.isEmpty { return "a node name cannot be empty" }
        if name.utf8.count > maxNodeNameLength { return "the node name '\(name)' is longer than \(maxNodeNameLength) bytes" }
        if let bad = name.unicodeScalars.first(where: { !isNodeNameCharacter($0) }) {
            return "the node name '\(name)' has '\(bad)': use letters, digits, '_', '-' and '.'"
        }
        return nil
    }

    private static func isNodeNameCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "_-.".unicodeScalars.contains(scalar))
    }

    /// Parses `--cluster nats://HOST:PORT[,nats://HOST:PORT...]`; the error names the
    /// offending URL and what is wrong with it.
    public static func parseURLList(_ text: String) -> Result<[String], URLProblem> {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        var urls: [String] = []
        for (index, part) in parts.enumerated() {
            if let problem = problem(withURL: part) {
                return .failure(URLProblem(url: part, index: index, message: problem))
            }
            urls.append(part)
        }
        return .success(urls)
    }

    /// A URL that is not `nats://HOST:PORT`: which one (and where in the list) and why.
    public struct URLProblem: Error, Hashable, Sendable, CustomStringConvertible {
        /// The offending URL, as given.
        public var url: String
        /// Its index in the list.
        public var index: Int
        /// What is wrong with it.
        public var message: String
        public var description: String { message }
    }

    /// Why `url` is not a `nats://HOST:PORT` URL, or `nil`.
    public static func problem(withURL url: String) -> String? {
        if url.isEmpty { return "an empty NATS URL (expected nats://HOST:PORT)" }
        guard let schemeEnd = url.range(of: "://") else {
            return "'\(url)' has no scheme: expected nats://HOST:PORT"
        }
        let scheme = url[..<schemeEnd.lowerBound]
        guard scheme == "nats" else {
            return "'\(url)': the scheme '\(scheme)' is not nats (expected nats://HOST:PORT)"
        }
        var rest = url[schemeEnd.upperBound...]
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }  // user:password@
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        if rest.contains("/") || rest.contains("?") {
            return "'\(url)' has a path or query: expected nats://HOST:PORT"
        }
        let host: Substring
        let portText: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return "'\(url)': the IPv6 address has no closing ']'" }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.hasPrefix(":") else { return "'\(url)' has no port: expected nats://HOST:PORT" }
            portText = after.dropFirst()
        } else {
            guard let colon = rest.lastIndex(of: ":") else { return "'\(url)' has no port: expected nats://HOST:PORT" }
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        }
        if host.isEmpty { return "'\(url)' has no host: expected nats://HOST:PORT" }
        if host.contains(where: { $0.isWhitespace }) { return "'\(url)': the host '\(host)' has a space" }
        guard let port = Int(portText), (1...65535).contains(port) else {
            return "'\(url)': the port '\(portText)' is not a number between 1 and 65535"
        }
        return nil
    }
}
