/// A WebSocket close status code (RFC 6455 section 7.4).
///
/// The constants are the protocol's own codes; an application's codes (4000–4999) are
/// created with ``init(_:)`` by the application that defines them.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric code sent in the close frame.
    public var rawValue: UInt16

    /// Wraps a numeric code.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Wraps a numeric code.
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: normal closure.
    public static let normal = WebSocketCloseCode(1000)
    /// 1001: going away (server shutting down).
    public static let goingAway = WebSocketCloseCode(1001)
    /// 1002: protocol error (a frame that breaks RFC 6455, such as a close frame with an
    /// invalid code or a one-byte payload).
    public static let protocolError = WebSocketCloseCode(1002)
    /// 1007: invalid payload (for example a text message that is not UTF-8).
    public static let invalidPayload = WebSocketCloseCode(1007)
    /// 1008: policy violation.
    public static let policyViolation = WebSocketCloseCode(1008)
    /// 1009: message too big.
    public static let messageTooBig = WebSocketCloseCode(1009)

    /// Whether a peer may send this code in a close frame (RFC 6455 §7.4.1 and the IANA
    /// registry: 1000–1003, 1007–1014, and 3000–4999 for libraries and applications);
    /// 1004–1006, 1015 and the rest are never sent.
    public var isValidOnTheWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }

    /// The numeric code.
    public var description: String { String(rawValue) }
}
