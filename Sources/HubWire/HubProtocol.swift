/// The constants of protocol v1 that the server, the client and the tools share
/// (PROTOCOL.md): one home, so that the generic transport knows none of them and
/// the server hands them to it as configuration.
public enum HubProtocol {
    /// The WebSocket subprotocol that selects protocol v1.
    public static let subprotocol = "hub.v1"
    /// The `protocol` field of `welcome`.
    public static let version = 1
}

/// A WebSocket close code the hub sends or expects (PROTOCOL.md §6): the generic
/// codes of RFC 6455 it uses, and its own in the 4000–4999 range.
public struct HubCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric code of the close frame.
    public var rawValue: UInt16

    /// Wraps a numeric code.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: normal closure (a client that closes).
    public static let normal = HubCloseCode(rawValue: 1000)
    /// 1001: the server is shutting down (after each live subscription got `shutting_down`).
    public static let goingAway = HubCloseCode(rawValue: 1001)
    /// 1008: policy violation (a client that receives a message outside the protocol).
    public static let policyViolation = HubCloseCode(rawValue: 1008)
    /// 1009: an inbound message larger than the server's limit.
    public static let messageTooBig = HubCloseCode(rawValue: 1009)
    /// 1012: service restart, a draining server closes its connections so that they
    /// reconnect elsewhere (after each live subscription got `shutting_down`).
    public static let serviceRestart = HubCloseCode(rawValue: 1012)
    /// 4008: slow consumer, the connection's queue passed its bound (PROTOCOL.md §5.8).
    public static let slowConsumer = HubCloseCode(rawValue: 4008)
    /// 4401: unauthorized, a missing or wrong token (PROTOCOL.md §2).
    public static let unauthorized = HubCloseCode(rawValue: 4401)
    /// 4429: too many connections.
    public static let tooManyConnections = HubCloseCode(rawValue: 4429)
    /// 4429 too: a connection that sent faster than its rate limits (the reason names
    /// the limit).
    public static let rateLimited = HubCloseCode(rawValue: 4429)

    /// The numeric code.
    public var description: String { String(rawValue) }
}
