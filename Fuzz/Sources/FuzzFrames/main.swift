import FuzzDriver
@testable import HubTransport

// The hub's own WebSocket framing and the reassembly of inbound fragments, driven by
// the input: each pair of bytes is a chunk length and flags. Frame headers the hub
// writes must read back (by RFC 6455 §5.2) as the kind and length written; a message
// reassembled from chunks must be their concatenation, refused exactly when larger
// than the limit.
runFuzzer { bytes in
    guard bytes.count >= 2 else { return }
    // 1. Frame headers.
    let length = bytes.prefix(8).reduce(0) { $0 << 8 | Int($1) } & 0x7fff_ffff_ffff
    for kind in [WebSocketMessageKind.text, .binary] {
        for key in [nil, UInt32(0x1234_5678)] as [UInt32?] {
            var header: [UInt8] = []
            FrameHeader.append(to: &header, kind: kind, payloadLength: length, maskingKey: key)
            precondition(header.count == FrameHeader.length(payloadLength: length, masked: key != nil))
            precondition(header[0] == 0x80 | (kind == .text ? 1 : 2))
            precondition((header[1] & 0x80 != 0) == (key != nil))
            var read = Int(header[1] & 0x7f)
            if read == 126 {
                read = Int(header[2]) << 8 | Int(header[3])
                precondition(read >= 126, "a 16-bit length under 126")
            } else if read == 127 {
                read = header[2..<10].reduce(0) { $0 << 8 | Int($1) }
                precondition(read >= 1 << 16, "a 64-bit length under 65536")
            }
            precondition(read == length, "header says \(read), written \(length)")
        }
    }
    // 2. Reassembly.
    let limit = Int(bytes[0]) * 4 + 1
    var assembler = InboundAssembler(maximumMessageSize: limit)
    var expected: [UInt8] = []
    var index = 1
    var filler: UInt8 = 0
    while index + 1 < bytes.count {
        let size = Int(bytes[index] & 0x7f)
        let completes = bytes[index + 1] & 1 == 1
        index += 2
        let chunk = (0..<size).map { _ in filler &+= 1; return filler }
        let wasReceiving = assembler.isReceiving
        let outcome = chunk.withUnsafeBytes { assembler.receive($0, isBinary: false, completesMessage: completes) }
        expected += chunk
        switch outcome {
        case .deliverChunk:
            precondition(!wasReceiving && completes && chunk.count <= limit)
            expected = []
        case .deliverAssembled:
            precondition(completes && expected.count <= limit)
            let message = assembler.takeMessage()
            precondition(message == expected, "reassembled \(message.count) bytes, sent \(expected.count)")
            expected = []
        case .awaitMore:
            precondition(!completes && expected.count <= limit)
        case .tooLarge:
            precondition(expected.count > limit, "refused \(expected.count) bytes under the limit \(limit)")
            expected = []
        }
    }
}
