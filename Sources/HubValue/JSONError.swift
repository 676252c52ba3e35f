/// Why a byte sequence is not valid JSON (RFC 8259), and where.
///
/// ``code`` is stable (clients and tests may match on it); ``offset`` is the
/// zero-based byte offset in the input at which the problem was found;
/// ``message`` reads like `byte 17: expected ',' or '}' after object member`.
public struct JSONError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The stable kinds of JSON errors. The raw value is the wire/log spelling.
    public enum Code: String, Sendable, Equatable, Hashable, CustomStringConvertible {
        /// A byte that cannot start or continue the expected construct.
        case unexpectedCharacter = "unexpected_character"
        /// The input ended inside a value (or was empty).
        case unexpectedEnd = "unexpected_end"
        /// A backslash followed by something other than a JSON escape, or a bad `\u` escape.
        case invalidEscape = "invalid_escape"
        /// A malformed number (leading zero, missing digits) or one that does not fit a finite `Double`.
        case invalidNumber = "invalid_number"
        /// Bytes that are not well-formed UTF-8 inside a string.
        case invalidUTF8 = "invalid_utf8"
        /// Arrays and objects nested deeper than the configured limit.
        case tooDeep = "too_deep"
        /// Something other than whitespace after the top-level value.
        case trailingCharacters = "trailing_characters"
        /// A raw control character (below U+0020) inside a string.
        case controlCharacter = "control_character"
        /// A `\u` escape of a UTF-16 surrogate that is not part of a valid pair.
        case invalidSurrogate = "invalid_surrogate"

        /// The stable spelling, e.g. `unexpected_character`.
        public var description: String { rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// The zero-based byte offset in the input where it went wrong.
    public let offset: Int
    /// A human-readable explanation without the position, e.g. `expected ':' after object key`.
    public let reason: String

    /// Creates an error.
    public init(code: Code, offset: Int, reason: String) {
        self.code = code
        self.offset = offset
        self.reason = reason
    }

    /// `byte <offset>: <reason>`.
    public var message: String { "byte \(offset): \(reason)" }

    /// `<code>: byte <offset>: <reason>`, for logs.
    public var description: String { "\(code.rawValue): \(message)" }
}
