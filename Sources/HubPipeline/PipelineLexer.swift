import HubWire

/// Splits pipeline source text into tokens, each with its position.
///
/// Numbers follow JSON (integers that fit in 64 bits stay exact); a number
/// directly followed by `ns`, `us`, `ms`, `s`, `m` or `h` is a duration.
/// Strings are JSON strings. Errors are `pipeline_error` with the position.
public struct PipelineLexer {
    /// One token.
    public enum Token: Hashable, Sendable {
        /// `[A-Za-z_][A-Za-z0-9_.]*`, keywords included.
        case name(String)
        /// `$name`.
        case variable(String)
        /// An integer literal.
        case int(Int64)
        /// A number literal that is not an exact `Int64`.
        case double(Double)
        /// A string literal (escapes resolved).
        case string(String)
        /// A string with interpolations `"order \(.id): \(.state)"`: its literal runs and
        /// the tokens of each interpolated expression (each ending with ``end``).
        case template([TemplatePart])
        /// A duration literal.
        case duration(Duration)
        /// Punctuation and operators: `| ( ) , [ ] { } : ? . + - * / % == != < <= > >= ->`.
        case symbol(String)
        /// The end of the text.
        case end

        /// How the token reads in an error message.
        public var display: String {
            switch self {
            case let .name(n): return "'\(n)'"
            case let .variable(n): return "'$\(n)'"
            case let .int(i): return "'\(i)'"
            case let .double(d): return "'\(d)'"
            case .string, .template: return "a string"
            case .duration: return "a duration"
            case let .symbol(s): return "'\(s)'"
            case .end: return "end of text"
            }
        }
    }

    /// A run of an interpolated string.
    public enum TemplatePart: Hashable, Sendable {
        /// Literal text (escapes resolved).
        case text(String)
        /// The tokens of `\( ... )`, ending with ``Token/end`` at the closing parenthesis.
        case code([Located])
    }

    /// A token and where it starts and ends (UTF-8 offsets).
    public struct Located: Hashable, Sendable {
        /// The token.
        public var token: Token
        /// Where it starts.
        public var position: SourcePosition
        /// The UTF-8 offset just after it.
        public var end: Int
    }

    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var column = 1
    private var interpolationDepth = 0

    /// A lexer over `source`.
    public init(_ source: String) {
        bytes = Array(source.utf8)
    }

    /// All tokens of the text, ending with ``Token/end``.
    public static func tokenize(_ source: String) throws(HubError) -> [Located] {
        var lexer = PipelineLexer(source)
        var tokens: [Located] = []
        while true {
            let next = try lexer.next()
            tokens.append(next)
            if next.token == .end { return tokens }
        }
    }

    private var position: SourcePosition { SourcePosition(line: line, column: column, offset: index) }

    private func peek(_ ahead: Int = 0) -> UInt8? {
        index + ahead < bytes.count ? bytes[index + ahead] : nil
    }

    private mutating func advance() {
        let byte = bytes[index]
        index += 1
        if byte == UInt8(ascii: "\n") {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {
            column += 1
        }
    }

    private static func isNameStart(_ b: UInt8) -> Bool {
        (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 95
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }

    private static func isNameChar(_ b: UInt8) -> Bool { isNameStart(b) || isDigit(b) || b == 46 }

    /// A `pipeline_error` at `position`.
    static func error(_ message: String, at position: SourcePosition) -> HubError {
        HubError(
            .pipelineError, "\(position.line):\(position.column): \(message)",
            data: .object(["line": .int(Int64(position.line)), "column": .int(Int64(position.column))]))
    }

    /// The next token.
    public mutating func next() throws(HubError) -> Located {
        while let b = peek(), b == 32 || b == 9 || b == 10 || b == 13 { advance() }
        let start = position
        guard let b = peek() else { return Located(token: .end, position: start, end: index) }
        let token: Token
        if Self.isNameStart(b) {
            token = .name(readName())
        } else if Self.isDigit(b) {
            token = try readNumber(start)
        } else if b == UInt8(ascii: "\"") {
            let parts = try readString(start)
            if parts.count == 1, case let .text(text) = parts[0] {
                token = .string(text)
            } else {
                token = .template(parts)
            }
        } else if b == UInt8(ascii: "$") {
            advance()
            guard let c = peek(), Self.isNameStart(c) else {
                throw Self.error("expected a variable name after '$'", at: start)
            }
            token = .variable(readName())
        } else {
            token = .symbol(try readSymbol(start))
        }
        return Located(token: token, position: start, end: index)
    }

    private mutating func readName() -> String {
        let from = index
        while let c = peek(), Self.isNameChar(c) { advance() }
        return String(decoding: bytes[from..<index], as: UTF8.self)
    }

    private mutating func readSymbol(_ start: SourcePosition) throws(HubError) -> String {
        let b = peek()!
        let two: [String] = ["==", "!=", "<=", ">=", "->"]
        if let c = peek(1) {
            let pair = String(decoding: [b, c], as: UTF8.self)
            if two.contains(pair) {
                advance(); advance()
                return pair
            }
        }
        let single = "|(),[]{}:?.+-*/%<>"
        if b < 128, single.utf8.contains(b) {
            advance()
            return String(decoding: [b], as: UTF8.self)
        }
        if b == UInt8(ascii: "=") { throw Self.error("unexpected '=' (use '==' to compare)", at: start) }
        if b == UInt8(ascii: "!") { throw Self.error("unexpected '!' (use 'not' or '!=')", at: start) }
        if b == UInt8(ascii: "'") { throw Self.error("strings use double quotes", at: start) }
        // Decode the whole scalar for the message.
        var end = index + 1
        while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
        let text = String(decoding: bytes[index..<end], as: UTF8.self)
        throw Self.error("unexpected character '\(text)'", at: start)
    }

    private mutating func readNumber(_ start: SourcePosition) throws(HubError) -> Token {
        let from = index
        if peek() == 48, let c = peek(1), Self.isDigit(c) {
            throw Self.error("a number cannot start with 0", at: start)
        }
        while let c = peek(), Self.isDigit(c) { advance() }
        var isInteger = true
        if peek() == UInt8(ascii: "."), let c = peek(1), Self.isDigit(c) {
            isInteger = false
            advance()
            while let c = peek(), Self.isDigit(c) { advance() }
        }
        if let e = peek(), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            var ahead = 1
            if let s = peek(1), s == UInt8(ascii: "+") || s == UInt8(ascii: "-") { ahead = 2 }
            if let d = peek(ahead), Self.isDigit(d) {
                isInteger = false
                for _ in 0..<ahead { advance() }
                while let c = peek(), Self.isDigit(c) { advance() }
            }
        }
        let text = String(decoding: bytes[from..<index], as: UTF8.self)
        // A unit directly after the number makes a duration.
        if let c = peek(), Self.isNameStart(c) {
            let unitStart = index
            while let c = peek(), Self.isNameStart(c) { advance() }
            let unit = String(decoding: bytes[unitStart..<index], as: UTF8.self)
            let nanosPerUnit: Double
            switch unit {
            case "ns": nanosPerUnit = 1
            case "us": nanosPerUnit = 1e3
            case "ms": nanosPerUnit = 1e6
            case "s": nanosPerUnit = 1e9
            case "m": nanosPerUnit = 60e9
            case "h": nanosPerUnit = 3600e9
            default:
                throw Self.error("unknown duration unit '\(unit)' (use ns, us, ms, s, m or h)", at: start)
            }
            if let c = peek(), Self.isNameChar(c) {
                throw Self.error("unexpected '\(String(UnicodeScalar(c)))' after duration", at: start)
            }
            guard let amount = Double(text) else { throw Self.error("invalid number", at: start) }
            let nanos = (amount * nanosPerUnit).rounded()
            guard nanos.isFinite, nanos < 9.2e18 else { throw Self.error("duration too long", at: start) }
            return .duration(.nanoseconds(Int64(nanos)))
        }
        if isInteger, let exact = Int64(text) { return .int(exact) }
        guard let d = Double(text), d.isFinite else { throw Self.error("number out of range", at: start) }
        return .double(d)
    }

    /// The deepest nesting of interpolations in strings (`"\("\(...)")"`).
    static let maximumInterpolationDepth = 8

    /// A string's runs: literal text, and the tokens of each `\( ... )` in it.
    private mutating func readString(_ start: SourcePosition) throws(HubError) -> [TemplatePart] {
        advance() // opening quote
        var parts: [TemplatePart] = []
        var scalars = String.UnicodeScalarView()
        var chunkStart = index
        func flush(_ lexer: PipelineLexer, _ from: Int) {
            scalars.append(contentsOf: String(decoding: lexer.bytes[from..<lexer.index], as: UTF8.self).unicodeScalars)
        }
        while true {
            guard let b = peek() else { throw Self.error("unterminated string", at: start) }
            if b == UInt8(ascii: "\"") {
                flush(self, chunkStart)
                advance()
                if !scalars.isEmpty || parts.isEmpty { parts.append(.text(String(scalars))) }
                return parts
            }
            if b < 0x20 {
                throw Self.error("control character in string (escape it)", at: position)
            }
            if b == UInt8(ascii: "\\") {
                flush(self, chunkStart)
                let escapePosition = position
                advance()
                guard let e = peek() else { throw Self.error("unterminated string", at: start) }
                advance()
                switch e {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "("):
                    // An interpolation: the tokens up to the matching ')'.
                    interpolationDepth += 1
                    defer { interpolationDepth -= 1 }
                    guard interpolationDepth <= Self.maximumInterpolationDepth else {
                        throw Self.error("interpolations nested too deeply", at: escapePosition)
                    }
                    if !scalars.isEmpty { parts.append(.text(String(scalars))) }
                    scalars = String.UnicodeScalarView()
                    var code: [Located] = []
                    var depth = 0
                    while true {
                        let token = try next()
                        if token.token == .end {
                            throw Self.error("unterminated interpolation '\\(' in string", at: escapePosition)
                        }
                        if token.token == .symbol("(") { depth += 1 }
                        if token.token == .symbol(")") {
                            if depth == 0 {
                                code.append(Located(token: .end, position: token.position, end: token.position.offset))
                                break
                            }
                            depth -= 1
                        }
                        code.append(token)
                    }
                    if code.count == 1 { throw Self.error("empty interpolation '\\()' in string", at: escapePosition) }
                    parts.append(.code(code))
                case UInt8(ascii: "u"):
                    let high = try readHex4(escapePosition)
                    if (0xD800...0xDBFF).contains(high) {
                        guard peek() == UInt8(ascii: "\\"), peek(1) == UInt8(ascii: "u") else {
                            throw Self.error("unpaired surrogate in \\u escape", at: escapePosition)
                        }
                        advance(); advance()
                        let low = try readHex4(escapePosition)
                        guard (0xDC00...0xDFFF).contains(low) else {
                            throw Self.error("unpaired surrogate in \\u escape", at: escapePosition)
                        }
                        let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                        scalars.append(UnicodeScalar(code)!)
                    } else if (0xDC00...0xDFFF).contains(high) {
                        throw Self.error("unpaired surrogate in \\u escape", at: escapePosition)
                    } else {
                        scalars.append(UnicodeScalar(high)!)
                    }
                default:
                    throw Self.error("invalid escape '\\\(String(UnicodeScalar(e)))' in string", at: escapePosition)
                }
                chunkStart = index
                continue
            }
            advance()
        }
    }

    private mutating func readHex4(_ at: SourcePosition) throws(HubError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let h = peek() else { throw Self.error("invalid \\u escape", at: at) }
            let digit: UInt32
            switch h {
            case 48...57: digit = UInt32(h - 48)
            case 65...70: digit = UInt32(h - 55)
            case 97...102: digit = UInt32(h - 87)
            default: throw Self.error("invalid \\u escape", at: at)
            }
            value = value * 16 + digit
            advance()
        }
        return value
    }
}
