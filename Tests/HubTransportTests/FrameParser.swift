import HubTransport

/// A WebSocket frame as RFC 6455 section 5.2 lays it out, decoded by the tests'
/// independent reader (not the transport's encoder).
struct ParsedFrame: Equatable {
    var fin: Bool
    var opcode: UInt8
    var maskingKey: [UInt8]?
    /// The payload, unmasked.
    var payload: [UInt8]
}

/// Splits `bytes` into complete frames; `nil` when they are not a whole number of
/// well-formed frames.
func parseFrames(_ bytes: [UInt8]) -> [ParsedFrame]? {
    var frames: [ParsedFrame] = []
    var index = 0
    while index < bytes.count {
        guard index + 2 <= bytes.count else { return nil }
        let fin = bytes[index] & 0x80 != 0
        guard bytes[index] & 0x70 == 0 else { return nil }  // no extension bits
        let opcode = bytes[index] & 0x0F
        let masked = bytes[index + 1] & 0x80 != 0
        var length = Int(bytes[index + 1] & 0x7F)
        index += 2
        if length == 126 {
            guard index + 2 <= bytes.count else { return nil }
            length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            guard length >= 126 else { return nil }  // minimal encoding
            index += 2
        } else if length == 127 {
            guard index + 8 <= bytes.count else { return nil }
            length = bytes[index..<index + 8].reduce(0) { $0 << 8 | Int($1) }
            guard length >= 1 << 16 else { return nil }
            index += 8
        }
        var key: [UInt8]?
        if masked {
            guard index + 4 <= bytes.count else { return nil }
            key = Array(bytes[index..<index + 4])
            index += 4
        }
        guard index + length <= bytes.count else { return nil }
        var payload = Array(bytes[index..<index + length])
        if let key {
            for offset in payload.indices { payload[offset] ^= key[offset % 4] }
        }
        index += length
        frames.append(ParsedFrame(fin: fin, opcode: opcode, maskingKey: key, payload: payload))
    }
    return frames
}

/// A final text (opcode 1) or binary (opcode 2) frame (masked with `key` when given).
func finalFrame(_ kind: WebSocketMessageKind, _ payload: [UInt8], key: [UInt8]? = nil) -> ParsedFrame {
    ParsedFrame(fin: true, opcode: kind == .text ? 1 : 2, maskingKey: key, payload: payload)
}
