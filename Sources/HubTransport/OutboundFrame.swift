import CWebsockets

/// One entry of a connection's outbound queue: its bytes with `LWS_PRE` bytes of
/// headroom in front, so that lws can write the frame header in place without copying.
///
/// A *preframed* entry instead holds several complete small WebSocket frames, headers
/// (and, client side, masking keys and masked payloads) included, appended one after the
/// other and written raw in one `lws_write`: the outbound queue's preframed tail, once
/// something else was queued behind it or it was full.
struct OutboundFrame {
    /// The bytes lws needs in front of a payload (`LWS_PRE`).
    static let headroom = Int(cws_lws_pre)

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

    /// An entry in `buffer` (an empty, possibly recycled one), headroom reserved.
    init(
        buffer: [UInt8], kind: WebSocketMessageKind, coalescingKey: UInt64? = nil, closing: [UInt8] = []
    ) {
        storage = buffer
        storage.append(contentsOf: repeatElement(0, count: OutboundFrame.headroom))
        self.kind = kind
        self.coalescingKey = coalescingKey
        self.closing = closing
    }

    /// The payload length (without the headroom).
    var payloadCount: Int { storage.count - OutboundFrame.headroom }

    /// Seals a coalesced message: nothing more is appended once writing starts.
    mutating func seal() {
        guard written == 0, coalescingKey != nil else { return }
        coalescingKey = nil
        if !closing.isEmpty {
            storage.append(contentsOf: closing)
            closing = []
        }
    }

    /// Whether the entry can go in a write batch: an unwritten message (not preframed)
    /// shorter than `limit` and than 64 KiB (a 16-bit length).
    func isBatchable(below limit: Int) -> Bool {
        !isPreframed && written == 0 && payloadCount < min(limit, 1 << 16)
    }

    /// A preframed entry holding `storage` (headroom, then `messageCount` complete frames).
    init(preframed storage: [UInt8], messageCount: Int) {
        self.storage = storage
        self.kind = .text
        self.isPreframed = true
        self.messageCount = messageCount
    }

    /// Appends one complete small frame to `storage`: header, masking key and masked
    /// payload when `maskingKey` is given.
    @inline(__always)
    static func appendFrame(
        to storage: inout [UInt8], opcode: UInt8, prefix: UnsafeRawBufferPointer,
        body: UnsafeRawBufferPointer, suffix: UnsafeRawBufferPointer, maskingKey: UInt32?
    ) {
        let length = prefix.count + body.count + suffix.count
        FrameHeader.append(to: &storage, opcode: opcode, payloadLength: length, maskingKey: maskingKey)
        let payloadStart = storage.count
        storage.append(contentsOf: prefix)
        storage.append(contentsOf: body)
        storage.append(contentsOf: suffix)
        if let maskingKey { WebSocketMasking.apply(key: maskingKey, to: &storage, from: payloadStart) }
    }

    /// Appends one element when the entry is an open coalescing message under `key` of
    /// `kind` below `limit` bytes; returns the bytes added, or -1 when the element needs
    /// a new message.
    @inline(__always)
    mutating func appendElement(
        key: UInt64, kind: WebSocketMessageKind, limit: Int, _ append: (inout [UInt8], _ opensMessage: Bool) -> Void
    ) -> Int {
        guard coalescingKey == key, self.kind == kind, written == 0, payloadCount < limit else { return -1 }
        let before = storage.count
        append(&storage, false)
        return storage.count - before
    }
}
