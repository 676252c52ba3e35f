import FuzzDriver
@testable import HubTransport

// The hub's own WebSocket framing, the server's frame parser and the reassembly of
// inbound fragments, driven by the input. Frame headers the hub writes must read back
// (by RFC 6455 §5.2) as the kind and length written; the input read as client frames
// must parse to the same events however it is split, every payload piece inside the
// input and no message past the limit; a message reassembled from chunks must be their
// concatenation, refused exactly when larger than the limit.

/// What the parser made of `input` fed in pieces cut at `cuts`, as comparable text.
func parseFrames(_ input: [UInt8], cuts: [Int], limit: Int) -> [String] {
    var parser = WebSocketFrameParser(maximumMessageSize: limit)
    var events: [String] = []
    var message: [UInt8] = []
    let bounds = Array(Set([0] + cuts.filter { $0 > 0 && $0 < input.count } + [input.count])).sorted()
    for (start, end) in zip(bounds, bounds.dropFirst()) {
        var piece = Array(input[start..<end])
        piece.withUnsafeMutableBytes { buffer in
            var offset = 0
            loop: while true {
                let before = offset
                switch parser.next(buffer, &offset) {
                case .needMore:
                    precondition(offset == buffer.count, "needMore with bytes left")
                    break loop
                case .data(let from, let count, let kind, let ends):
                    precondition(from >= before && from + count <= offset && offset <= buffer.count)
                    message += buffer[from..<(from + count)]
                    precondition(message.count <= limit, "a message past the limit")
                    if ends {
                        events.append("\(kind) \(message)")
                        message = []
                    }
                case .control(let opcode, let payload):
                    precondition(payload.count <= 125 && [0x8, 0x9, 0xA].contains(opcode))
                    events.append("control \(opcode) \(payload)")
                case .failure(let code, _):
                    precondition([1002, 1009].contains(code.rawValue))
                    events.append("failure \(code.rawValue)")
                    break loop
                }
            }
        }
        if events.last?.hasPrefix("failure") == true { break }
    }
    return events
}

runFuzzer { bytes in
    guard bytes.count >= 2 else { return }
    // 0. The server's frame parser: the same events whole, split at one place, and split
    //    at every byte.
    let input = Array(bytes)
    let frameLimit = Int(bytes[0]) * 64 + 1
    let whole = parseFrames(input, cuts: [], limit: frameLimit)
    let cut = Int(bytes[1]) % input.count
    precondition(parseFrames(input, cuts: [cut], limit: frameLimit) == whole, "a split at \(cut) parses differently")
    if input.count <= 256 {
        precondition(parseFrames(input, cuts: Array(1..<input.count), limit: frameLimit) == whole, "byte by byte differs")
    }
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
