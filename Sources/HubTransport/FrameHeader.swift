/// The WebSocket frame header encoder (RFC 6455 section 5.2): the one place where the
/// transport frames messages itself (preframed queue entries, write batches). lws frames
/// the rest (large messages and their fragments).
enum FrameHeader {
    /// The header's length in bytes for a payload of `payloadLength` bytes, the masking
    /// key included when `masked`.
    @inline(__always)
    static func length(payloadLength: Int, masked: Bool) -> Int {
        let base = payloadLength < 126 ? 2 : payloadLength < 1 << 16 ? 4 : 10
        return masked ? base + 4 : base
    }

    /// The opcode of a data frame of `kind`.
    @inline(__always)
    static func opcode(_ kind: WebSocketMessageKind) -> UInt8 {
        kind == .text ? 0x1 : 0x2
    }

    /// The opcode of a ping (a control frame).
    static let pingOpcode: UInt8 = 0x9

    /// Appends the header of a final (unfragmented) frame of `kind` carrying
    /// `payloadLength` bytes (see ``append(to:opcode:payloadLength:maskingKey:)``).
    @inline(__always)
    static func append(
        to storage: inout [UInt8], kind: WebSocketMessageKind, payloadLength: Int, maskingKey: UInt32? = nil
    ) {
        append(to: &storage, opcode: opcode(kind), payloadLength: payloadLength, maskingKey: maskingKey)
    }

    /// Appends the header of a final (unfragmented) frame with `opcode` carrying
    /// `payloadLength` bytes: FIN and opcode, the mask bit and the 7-, 16- or 64-bit
    /// length, then `maskingKey` in network order when given (client frames).
    @inline(__always)
    static func append(to storage: inout [UInt8], opcode: UInt8, payloadLength: Int, maskingKey: UInt32? = nil) {
        storage.append(0x80 | opcode)
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        if payloadLength < 126 {
            storage.append(maskBit | UInt8(payloadLength))
        } else if payloadLength < 1 << 16 {
            storage.append(maskBit | 126)
            storage.append(UInt8(truncatingIfNeeded: payloadLength >> 8))
            storage.append(UInt8(truncatingIfNeeded: payloadLength))
        } else {
            storage.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                storage.append(UInt8(truncatingIfNeeded: UInt64(payloadLength) >> UInt64(shift)))
            }
        }
        if let maskingKey {
            storage.append(UInt8(truncatingIfNeeded: maskingKey >> 24))
            storage.append(UInt8(truncatingIfNeeded: maskingKey >> 16))
            storage.append(UInt8(truncatingIfNeeded: maskingKey >> 8))
            storage.append(UInt8(truncatingIfNeeded: maskingKey))
        }
    }
}
