/// One entry of a connection's outbound queue: its bytes with `LWS_PRE` bytes of
/// headroom in front, so that lws can write the frame header in place without copying.
///
/// A *preframed* entry instead holds several complete small WebSocket frames, headers
/// (and, client side, masking keys and masked payloads) included, appended one after the other and written raw in one
/// `lws_write`: small messages cost one copy and no allocation of their own.
struct OutboundFrame {
    /// `LWS_PRE` reserved bytes, then the payload (or the complete frames when preframed).
    var storage: [UInt8]
    /// Text or binary.
    var kind: WebSocketMessageKind
    /// Payload bytes already handed to lws.
    var written: Int = 0
    /// While set and nothing is written yet, more elements may be appended under this key.
    var coalescingKey: UInt64?
    /// Bytes appended when the frame is sealed (when its first byte is about to be written).
    var closing: [UInt8] = []
    /// Whether `storage` holds complete frames (headers included) to be written raw.
    var isPreframed = false
    /// The number of messages in the entry (more than one only when preframed).
    var messageCount = 1

    /// The payload length (without the headroom).
    var payloadCount: Int { storage.count - WebSocketConnection.headroom }
}
