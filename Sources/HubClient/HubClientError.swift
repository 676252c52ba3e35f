import HubValue
import HubWire

/// A failure of the Swift client, with a stable machine-readable ``code``.
///
/// Errors the server reported (an `error` message carrying a subscription id or
/// an ack) keep the server's code (``Code/init(_:)``), message and `data`, and
/// the original ``HubError`` in ``serverError``. The client's own failures
/// use the codes below.
public struct HubClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable identifier of the kind of failure: one of the client's own codes
    /// or a server's protocol error code (PROTOCOL.md §6).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as text, stable across releases.
        public var rawValue: String

        /// Wraps a raw code.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The server's code `code` (for example `not_found`).
        public init(_ code: HubError.Code) { self.rawValue = code.rawValue }

        /// The URL is not a valid `ws://` or `wss://host:port/path` URL; the message names the offending part.
        public static let invalidURL = Code(rawValue: "invalid_url")
        /// The connection could not be established (refused, unreachable, failed WebSocket
        /// or TLS handshake);
        /// the message names `host:port`.
        public static let connectionFailed = Code(rawValue: "connection_failed")
        /// A connect or a request did not finish within its timeout.
        public static let timeout = Code(rawValue: "timeout")
        /// The server sent something that is not protocol v1.
        public static let protocolError = Code(rawValue: "protocol_error")
        /// The connection was lost while a subscription or request was live. Subscriptions
        /// to subjects with history resume after the reconnect instead; others fail with
        /// it. ``closeCode`` holds the close code, if any.
        public static let disconnected = Code(rawValue: "disconnected")
        /// The client was closed with ``HubClient/close()``.
        public static let closed = Code(rawValue: "closed")
        /// A subscription to a subject with history could not go on without a gap: the
        /// server no longer holds the values after the last offset it delivered (or
        /// those a `since` asked for), for example after a restart of a subject that is
        /// not durable (a new epoch). ``HubClientError/data`` holds `{"offset", "epoch"}`.
        public static let resumeFailed = Code(rawValue: "resume_failed")

        /// The raw code.
        public var description: String { rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A human-readable explanation that names the offending part.
    public var message: String
    /// Details as JSON: the server's `data` (for example `{"line":1,"column":4}` of a
    /// `pipeline_error`, or the error value of a `failed` stream).
    public var data: Value?
    /// The server's error, when the server reported this failure.
    public var serverError: HubError?
    /// The WebSocket close code of a ``Code/disconnected`` error, when the peer sent one.
    public var closeCode: UInt16?

    /// Creates a client error.
    public init(code: Code, message: String, data: Value? = nil, closeCode: UInt16? = nil) {
        self.code = code
        self.message = message
        self.data = data
        self.closeCode = closeCode
    }

    /// Wraps an error the server reported, keeping its code, message and data.
    public init(server error: HubError) {
        self.code = Code(error.code)
        self.message = error.message
        self.data = error.data
        self.serverError = error
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}

extension HubClientError {
    /// A lost connection's error, as a subscription that cannot resume gets it: it says
    /// why (its name keeps no history to resume from).
    var explainingNoHistory: HubClientError {
        guard code == .disconnected else { return self }
        var error = self
        error.message += " (the subscription cannot resume: it keeps no history)"
        return error
    }
}
