/// A message that could not be decoded into something the session can act on
/// by id: the error to send back, and the `ack` to carry when the message had a
/// valid one.
///
/// With `ack == nil` the error is connection-level (PROTOCOL.md §3): not JSON,
/// not an object, no string `op`, an `ack` of the wrong type, a `subscribe`,
/// `request` or `cancel` without a valid `id`, or an unknown `op` without a
/// valid `ack`. With an `ack`, it is the failure of that acked request (an
/// unknown `op`, or a missing or ill-typed field of `send`, `complete`,
/// `fail`, `trigger`). Errors that belong to a subscription id are not thrown:
/// they are ``SubscribeCheck/invalid(_:)`` and ``DemandCheck/invalid(_:)``.
///
/// The Swift client also gets a `WireError` (code `bad_message`, no ack) for a
/// malformed server message.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The error to report: its code, a message naming the field, optional data.
    public var error: HubError
    /// The `ack` the error answers, or `nil` for a connection-level error.
    public var ack: Int64?

    /// An error answering `ack` (or connection-level when `nil`).
    public init(_ error: HubError, ack: Int64? = nil) {
        self.error = error
        self.ack = ack
    }

    /// The `error` message to send back for this failure.
    public var serverMessage: ServerMessage { .error(error, id: nil, ack: ack) }

    /// `code: message`, with the ack when there is one.
    public var description: String {
        if let ack { return "\(error) (ack \(ack))" }
        return error.description
    }
}
