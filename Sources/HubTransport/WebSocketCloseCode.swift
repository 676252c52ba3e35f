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
    /// 1007: invalid payload (for example a text message that is not UTF-8).
    public static let invalidPayload = WebSocketCloseCode(1007)
    /// 1008: policy violation.
    public static let policyViolation = WebSocketCloseCode(1008)
    /// 1009: message too big.
    public static let messageTooBig = WebSocketCloseCode(1009)

    /// The numeric code.
    public var description: String { String(rawValue) }
}
