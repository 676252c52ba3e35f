import HubWire

/// What a ``Session`` needs from its connection: a way to queue one text
/// message, a way to grow a batch message, the bytes still queued, and a way
/// to close. The WebSocket transport provides it; the session knows nothing
/// else of the network.
public protocol SessionConnection: AnyObject {
    /// Queues one text message whose bytes `build` appends to `buffer`.
    /// Returns `false` when the connection no longer accepts messages.
    @discardableResult
    func sendMessage(_ build: (inout [UInt8]) -> Void) -> Bool

    /// Queues one text message made of `prefix`, `body` and `suffix`, copied straight
    /// into the outbound queue (for example a subscription's `next` envelope around a
    /// value encoded once for every subscriber), so that no per-message buffer is
    /// built. Returns `false` when the connection no longer accepts messages.
    @discardableResult
    func sendMessage(prefix: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, suffix: UnsafeRawBufferPointer) -> Bool

    /// Appends one element to the text message open under `key` at the tail of
    /// the outbound queue, if it has not started to be written, or queues a new
    /// message under `key`. `append` writes the element, preceded by the
    /// message's opening when `opensMessage`, or else by a separator; `closing`
    /// ends the message when it is written. This is how values of one
    /// subscription become one `next` with `values`.
    @discardableResult
    func sendBatched(key: UInt64, closing: [UInt8], _ append: (inout [UInt8], _ opensMessage: Bool) -> Void) -> Bool

    /// Payload bytes queued and not yet handed to the socket.
    var queuedBytes: Int { get }

    /// Closes the connection with one of the hub's close codes; `discardingQueued`
    /// drops what is still queued (for a slow consumer).
    func close(code: HubCloseCode, reason: String, discardingQueued: Bool)

    /// Drops the connection at once, without a close handshake: for a peer that has not
    /// read its close frame within the session's close timeout.
    func abort()

    /// Stops reading the client's messages (a publisher slowed down by a congested subject).
    func pauseReading()

    /// Reads the client's messages again after ``pauseReading()``.
    func resumeReading()

    /// Whether the connection frames each value of a subscription itself
    /// (``sendValue(_:offset:subscription:)``) rather than taking the protocol's `next`
    /// messages: a Server-Sent Events stream, which writes a value's JSON, encoded once
    /// for every subscriber, as an event's data.
    var framesValues: Bool { get }

    /// Queues one value of subscription `subscription` (a connection that
    /// ``framesValues``): `body` is its JSON, `offset` its offset in a subject with
    /// history. Returns `false` when the connection no longer accepts messages.
    @discardableResult
    func sendValue(_ body: UnsafeRawBufferPointer, offset: UInt64?, subscription: UInt64) -> Bool
}

extension SessionConnection {
    /// By default nothing: a connection that cannot be dropped keeps its pending close.
    public func abort() {}

    /// By default nothing: a connection that cannot pause reads on.
    public func pauseReading() {}

    /// By default nothing.
    public func resumeReading() {}

    /// By default `false`: values go as `next` messages.
    public var framesValues: Bool { false }

    /// By default nothing is sent (a connection that does not frame values is never asked).
    public func sendValue(_ body: UnsafeRawBufferPointer, offset: UInt64?, subscription: UInt64) -> Bool { false }
}

extension SessionConnection {
    /// Builds the message with ``sendMessage(_:)``: for connections without a cheaper way.
    @discardableResult
    public func sendMessage(
        prefix: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, suffix: UnsafeRawBufferPointer
    ) -> Bool {
        sendMessage { buffer in
            buffer.append(contentsOf: prefix)
            buffer.append(contentsOf: body)
            buffer.append(contentsOf: suffix)
        }
    }
}
