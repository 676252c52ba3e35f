/// The WebSocket frame header encoder (RFC 6455 section 5.2): the one place where the
/// transport frames messages itself (preframed queue entries, write batches, and every
/// frame a server connection writes). lws frames a client connection's large messages.
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

    /// Writes an unmasked header (server frames) at `destination`: FIN when `fin`,
    /// `opcode` (0 for a continuation), the 7-, 16- or 64-bit length. There must be
    /// ``length(payloadLength:masked:)`` bytes.
    @inline(__always)
    static func write(into destination: UnsafeMutableRawPointer, fin: Bool, opcode: UInt8, payloadLength: Int) {
        destination.storeBytes(of: (fin ? 0x80 : 0) | opcode, as: UInt8.self)
        if payloadLength < 126 {
            destination.storeBytes(of: UInt8(payloadLength), toByteOffset: 1, as: UInt8.self)
        } else if payloadLength < 1 << 16 {
            destination.storeBytes(of: 126, toByteOffset: 1, as: UInt8.self)
            destination.storeBytes(of: UInt16(payloadLength).bigEndian, toByteOffset: 2, as: UInt16.self)
        } else {
            destination.storeBytes(of: 127, toByteOffset: 1, as: UInt8.self)
            destination.storeBytes(of: UInt64(payloadLength).bigEndian, toByteOffset: 2, as: UInt64.self)
        }
    }

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
