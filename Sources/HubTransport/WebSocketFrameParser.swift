/// The server's reader of client frames (RFC 6455 §5): a state machine fed the socket's
/// bytes in pieces of any size, that unmasks payloads in place (eight bytes at a step)
/// and says what they are: pieces of a data message, a whole control frame, or the
/// rule a frame broke and the close code that answers it.
///
/// Enforced at the frame's header, before its payload arrives: masking (1002), the RSV
/// bits (1002), reserved opcodes (1002), control frames final and at most 125 bytes
/// (1002), the 64-bit length's top bit and minimal length encodings (1002), the
/// continuation rules (1002), and a message declared larger than the limit (1009).
/// Tested without sockets.
struct WebSocketFrameParser {
    /// What the next bytes are.
    enum Event: Equatable {
        /// Every byte given was used; more are needed.
        case needMore
        /// `count` unmasked payload bytes of a data message at `start` in the input
        /// (`count` may be 0 for an empty final frame); `endsMessage`: the message is complete.
        case data(start: Int, count: Int, kind: WebSocketMessageKind, endsMessage: Bool)
        /// A whole control frame (close 0x8, ping 0x9, pong 0xA) and its unmasked payload.
        case control(opcode: UInt8, payload: [UInt8])
        /// A frame broke a rule: close with `code`; nothing more is parsed.
        case failure(WebSocketCloseCode, String)
    }

    /// The largest message accepted (bytes): a frame that would take a message past it is
    /// refused with 1009 as soon as its header is read.
    let maximumMessageSize: Int

    // The header being read when it spans inputs (at most 14 bytes).
    private var header: [UInt8] = []
    // The frame whose payload is being read.
    private var inFrame = false
    private var remaining = 0
    private var maskingKey: UInt32 = 0
    /// Payload bytes of the current frame read so far, modulo 4 (the key's phase).
    private var phase = 0
    private var opcode: UInt8 = 0
    private var fin = false
    private var controlPayload: [UInt8] = []
    // The data message (possibly fragmented) in progress.
    private var inMessage = false
    private var messageKind = WebSocketMessageKind.text
    private var messageBytes = 0
    /// Set after a failure or ``stop()``: the rest is ignored.
    private(set) var isStopped = false

    init(maximumMessageSize: Int) {
        self.maximumMessageSize = maximumMessageSize
        header.reserveCapacity(14)
    }

    /// Ignores everything from now on (the connection is closing).
    mutating func stop() {
        isStopped = true
    }

    /// Whether a fragmented data message has started and not ended.
    var isInMessage: Bool { inMessage }

    /// Parses from `input[offset...]`, unmasking payload bytes in place: returns the next
    /// event, with `offset` moved past the bytes it used.
    @inline(__always)
    mutating func next(_ input: UnsafeMutableRawBufferPointer, _ offset: inout Int) -> Event {
        while true {
            guard !isStopped else {
                offset = input.count
                return .needMore
            }
            if inFrame {
                let available = input.count - offset
                if opcode >= 0x8 {
                    let count = min(available, remaining)
                    if count > 0 {
                        let start = controlPayload.count
                        controlPayload.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[offset..<(offset + count)]))
                        let key = rotatedKey
                        controlPayload.withUnsafeMutableBytes { bytes in
                            WebSocketMasking.apply(key: key, to: UnsafeMutableRawBufferPointer(rebasing: bytes[start...]))
                        }
                        phase = (phase + count) & 3
                        remaining -= count
                        offset += count
                    }
                    guard remaining == 0 else { return .needMore }
                    inFrame = false
                    let payload = controlPayload
                    controlPayload.removeAll(keepingCapacity: true)
                    return .control(opcode: opcode, payload: payload)
                }
                if remaining == 0 {
                    // An empty data frame.
                    inFrame = false
                    guard fin else { continue }
                    inMessage = false
                    return .data(start: offset, count: 0, kind: messageKind, endsMessage: true)
                }
                guard available > 0 else { return .needMore }
                let count = min(available, remaining)
                let start = offset
                WebSocketMasking.apply(
                    key: rotatedKey, to: UnsafeMutableRawBufferPointer(rebasing: input[start..<(start + count)]))
                phase = (phase + count) & 3
                remaining -= count
                offset += count
                var ends = false
                if remaining == 0 {
                    inFrame = false
                    if fin {
                        inMessage = false
                        ends = true
                    }
                }
                return .data(start: start, count: count, kind: messageKind, endsMessage: ends)
            }
            if let failure = readHeader(input, &offset) {
                isStopped = true
                return failure
            }
            guard inFrame else { return .needMore }
        }
    }

    /// The masking key as it applies from the current payload position (rotated by the
    /// phase, its first byte the next byte's).
    @inline(__always)
    private var rotatedKey: UInt32 {
        phase == 0 ? maskingKey : maskingKey << UInt32(8 * phase) | maskingKey >> UInt32(32 - 8 * phase)
    }

    /// Reads a frame header from `input[offset...]` (finishing one begun in an earlier
    /// input); on success the frame starts (`inFrame`). Returns the failure a header
    /// breaks a rule with.
    @inline(__always)
    private mutating func readHeader(_ input: UnsafeMutableRawBufferPointer, _ offset: inout Int) -> Event? {
        let available = input.count - offset
        // The fast path: a whole header in this input.
        if header.isEmpty, available >= 2 {
            let first = input[offset], second = input[offset + 1]
            let needed = WebSocketFrameParser.headerLength(second)
            if available >= needed {
                let result = startFrame(first, second) { index in input[offset + index] }
                offset += needed
                return result
            }
        }
        // Slow path: gather the header byte by byte.
        while offset < input.count {
            header.append(input[offset])
            offset += 1
            if header.count == 2, let failure = WebSocketFrameParser.check(header[0], header[1]) {
                // Refused without waiting for the rest of the header.
                header.removeAll(keepingCapacity: true)
                return failure
            }
            if header.count >= 2, header.count == WebSocketFrameParser.headerLength(header[1]) {
                let bytes = header
                header.removeAll(keepingCapacity: true)
                return startFrame(bytes[0], bytes[1]) { bytes[$0] }
            }
        }
        return nil
    }

    /// The rules the first two bytes of a header can break: RSV bits, reserved opcodes,
    /// fragmented or long control frames, a missing mask.
    @inline(__always)
    private static func check(_ first: UInt8, _ second: UInt8) -> Event? {
        guard first & 0x70 == 0 else {
            return .failure(.protocolError, "reserved bits set without an extension")
        }
        let opcode = first & 0x0F
        switch opcode {
        case 0x0, 0x1, 0x2:
            break
        case 0x8, 0x9, 0xA:
            guard first & 0x80 != 0 else { return .failure(.protocolError, "a fragmented control frame") }
            guard second & 0x7F <= 125 else { return .failure(.protocolError, "a control frame longer than 125 bytes") }
        default:
            return .failure(.protocolError, "reserved opcode \(opcode)")
        }
        guard second & 0x80 != 0 else { return .failure(.protocolError, "a client frame that is not masked") }
        return nil
    }

    /// The header's length given its second byte (a mask key counted when the mask bit is set).
    @inline(__always)
    private static func headerLength(_ second: UInt8) -> Int {
        let length = second & 0x7F
        let base = length == 126 ? 4 : length == 127 ? 10 : 2
        return second & 0x80 != 0 ? base + 4 : base
    }

    /// Checks a complete header (`byte(i)` its `i`th byte) and starts its frame.
    @inline(__always)
    private mutating func startFrame(_ first: UInt8, _ second: UInt8, _ byte: (Int) -> UInt8) -> Event? {
        if let failure = WebSocketFrameParser.check(first, second) { return failure }
        let opcode = first & 0x0F
        let fin = first & 0x80 != 0
        let shortLength = Int(second & 0x7F)
        var length = shortLength
        var keyStart = 2
        if shortLength == 126 {
            length = Int(byte(2)) << 8 | Int(byte(3))
            keyStart = 4
            guard length >= 126 else { return .failure(.protocolError, "a length not in its shortest form") }
        } else if shortLength == 127 {
            var wide: UInt64 = 0
            for index in 2..<10 { wide = wide << 8 | UInt64(byte(index)) }
            keyStart = 10
            guard wide & (1 << 63) == 0 else { return .failure(.protocolError, "a 64-bit length with its top bit set") }
            guard wide >= 1 << 16 else { return .failure(.protocolError, "a length not in its shortest form") }
            guard wide <= UInt64(maximumMessageSize) else {
                return .failure(.messageTooBig, "message too big")
            }
            length = Int(wide)
        }
        switch opcode {
        case 0x0:
            guard inMessage else { return .failure(.protocolError, "a continuation frame without a message") }
            guard messageBytes + length <= maximumMessageSize else { return .failure(.messageTooBig, "message too big") }
            messageBytes += length
        case 0x1, 0x2:
            guard !inMessage else { return .failure(.protocolError, "a new message inside a fragmented one") }
            guard length <= maximumMessageSize else { return .failure(.messageTooBig, "message too big") }
            inMessage = true
            messageKind = opcode == 0x1 ? .text : .binary
            messageBytes = length
        default:
            break
        }
        maskingKey = UInt32(byte(keyStart)) << 24 | UInt32(byte(keyStart + 1)) << 16 | UInt32(byte(keyStart + 2)) << 8
            | UInt32(byte(keyStart + 3))
        self.opcode = opcode
        self.fin = fin
        remaining = length
        phase = 0
        inFrame = true
        return nil
    }
}
