/// One queued outbound WebSocket message: its bytes with `LWS_PRE` bytes of headroom in
/// front, so that lws can write the frame header in place without copying the payload.
struct OutboundFrame {
    /// `LWS_PRE` reserved bytes, then the payload.
    var storage: [UInt8]
    /// Text or binary.
    var kind: WebSocketMessageKind
    /// Payload bytes already handed to lws.
    var written: Int = 0
    /// While set and nothing is written yet, more elements may be appended under this key.
    var coalescingKey: UInt64?
    /// Bytes appended when the frame is sealed (when its first byte is about to be written).
    var closing: [UInt8] = []

    /// The payload length (without the headroom).
    var payloadCount: Int { storage.count - WebSocketConnection.headroom }
}
