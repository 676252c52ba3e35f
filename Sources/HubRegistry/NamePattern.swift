import HubWire

/// A pattern over dotted names, as NATS subjects: `prices.*` matches `prices.AAPL` (`*`
/// stands for exactly one segment), `orders.>` matches `orders.eu` and `orders.eu.paid`
/// (`>` stands for one or more segments, and only ends a pattern), `>` alone matches
/// every name, and a pattern without wildcards matches only itself.
///
/// Segments are separated by `.`; a pattern's other segments are compared literally, so
/// patterns may name the broker's system names too (`$sys.*`).
public struct NamePattern: Hashable, Sendable, CustomStringConvertible {
    /// The pattern as written.
    public let text: String
    private let segments: [Substring]
    private let matchesRest: Bool

    /// Parses `text`; throws `bad_message` naming the problem (an empty pattern or
    /// segment, `>` before the end, a wildcard inside a segment such as `pri*`).
    public init(_ text: String) throws(HubError) {
        guard !text.isEmpty else { throw HubError(.badMessage, "a name pattern cannot be empty") }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        for (index, part) in parts.enumerated() {
            guard !part.isEmpty else {
                throw HubError(.badMessage, "name pattern '\(text)' has an empty segment")
            }
            if part == ">" {
                guard index == parts.count - 1 else {
                    throw HubError(.badMessage, "name pattern '\(text)': '>' can only end a pattern")
                }
            } else if part != "*", part.contains(where: { $0 == "*" || $0 == ">" }) {
                throw HubError(
                    .badMessage,
                    "name pattern '\(text)': '*' and '>' stand for whole segments ('prices.*', not 'prices*')")
            }
        }
        self.text = text
        matchesRest = parts.last == ">"
        segments = matchesRest ? Array(parts.dropLast()) : parts
    }

    /// Whether `name` matches.
    public func matches(_ name: String) -> Bool {
        var index = name.startIndex
        for (position, segment) in segments.enumerated() {
            // The next segment of the name.
            guard index <= name.endIndex else { return false }
            let end = name[index...].firstIndex(of: ".") ?? name.endIndex
            let part = name[index..<end]
            if part.isEmpty { return false }
            if segment != "*", part != segment { return false }
            if end == name.endIndex {
                // The name ends here: a match when the pattern ends here too.
                return position == segments.count - 1 && !matchesRest
            }
            index = name.index(after: end)
        }
        // Segments left in the name: only '>' takes them.
        return matchesRest && index < name.endIndex
    }

    /// The pattern as written.
    public var description: String { text }
}
