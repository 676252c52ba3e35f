@testable import HubTransport
import Testing

/// The server's frame reader without sockets: client frames fed in every split, every
/// RFC 6455 rule it enforces at the header, and unmasking at every key phase.
@Suite("WebSocket frame parser")
struct WebSocketFrameParserTests {
    /// What the parser made of some bytes: whole messages, control frames, a failure.
    enum Outcome: Equatable {
        case message(WebSocketMessageKind, [UInt8])
        case control(UInt8, [UInt8])
        case failure(UInt16)
    }

    /// A client frame (masked with `key` unless `masked` is false); `length` overrides the
    /// encoded length, `rsv` sets reserved bits, `longForm` forces a 16- or 64-bit length.
    static func frame(
        _ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv: UInt8 = 0,
        key: [UInt8] = [0x12, 0x9a, 0xfe, 0x03], length: Int? = nil, longForm: Int? = nil
    ) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | rsv << 4 | opcode]
        let count = length ?? payload.count
        let maskBit: UInt8 = masked ? 0x80 : 0
        let form = longForm ?? (count < 126 ? 7 : count < 1 << 16 ? 16 : 64)
        switch form {
        case 7: bytes.append(maskBit | UInt8(count))
        case 16: bytes += [maskBit | 126, UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
        default:
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: UInt64(count) >> UInt64(shift))) }
        }
        guard masked else { return bytes + payload }
        return bytes + key + payload.enumerated().map { $0.element ^ key[$0.offset & 3] }
    }

    /// Feeds `bytes` in pieces cut at `cuts` (sorted offsets) and assembles what comes out.
    static func parse(_ bytes: [UInt8], cuts: [Int] = [], limit: Int = 1 << 20) -> [Outcome] {
        var parser = WebSocketFrameParser(maximumMessageSize: limit)
        var outcomes: [Outcome] = []
        var message: [UInt8] = []
        var bounds = [0] + cuts.filter { $0 > 0 && $0 < bytes.count } + [bytes.count]
        bounds = Array(Set(bounds)).sorted()
        for (start, end) in zip(bounds, bounds.dropFirst()) {
            var piece = Array(bytes[start..<end])
            piece.withUnsafeMutableBytes { buffer in
                var offset = 0
                loop: while true {
                    switch parser.next(buffer, &offset) {
                    case .needMore:
                        break loop
                    case .data(let from, let count, let kind, let ends):
                        message += buffer[from..<(from + count)]
                        if ends {
                            outcomes.append(.message(kind, message))
                            message = []
                        }
                    case .control(let opcode, let payload):
                        outcomes.append(.control(opcode, payload))
                    case .failure(let code, _):
                        outcomes.append(.failure(code.rawValue))
                    }
                }
            }
        }
        return outcomes
    }

    @Test func framesSplitAtEveryByteBoundaryReadTheSame() {
        let text = Array("{\"op\":\"send\",\"value\":\"héllo\"}".utf8)
        let binary = (0..<300).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let bytes = Self.frame(0x1, text) + Self.frame(0x9, Array("ping".utf8)) + Self.frame(0x2, binary)
            + Self.frame(0x1, [], fin: true) + Self.frame(0xA, [])
        let expected: [Outcome] = [
            .message(.text, text), .control(0x9, Array("ping".utf8)), .message(.binary, binary), .message(.text, []),
            .control(0xA, []),
        ]
        #expect(Self.parse(bytes) == expected)
        for cut in 1..<bytes.count {
            #expect(Self.parse(bytes, cuts: [cut]) == expected, "cut at \(cut)")
        }
        #expect(Self.parse(bytes, cuts: Array(1..<bytes.count)) == expected, "one byte at a time")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let cuts = (0..<Int.random(in: 1...12, using: &generator)).map { _ in Int.random(in: 1..<bytes.count, using: &generator) }
            #expect(Self.parse(bytes, cuts: cuts.sorted()) == expected, "cuts \(cuts.sorted())")
        }
    }

    @Test func unmaskingIsRightAtEveryKeyPhaseAndLength() {
        for length in [0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 125, 126, 1000, 70_000] {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) }
            let bytes = Self.frame(0x2, payload, key: [0xde, 0xad, 0xbe, 0xef])
            for cut in [3, 7, 9, 10, 13, 100, 4097] where cut < bytes.count {
                #expect(Self.parse(bytes, cuts: [cut, cut + 1, cut + 5]) == [.message(.binary, payload)], "length \(length) cut \(cut)")
            }
            #expect(Self.parse(bytes) == [.message(.binary, payload)], "length \(length)")
        }
    }

    @Test func fragmentedMessagesWithControlFramesBetweenTheirFragments() {
        let bytes = Self.frame(0x1, Array("hel".utf8), fin: false) + Self.frame(0x9, [1, 2]) + Self.frame(0x0, [], fin: false)
            + Self.frame(0x0, Array("lo".utf8), fin: true)
        let expected: [Outcome] = [.control(0x9, [1, 2]), .message(.text, Array("hello".utf8))]
        for cut in 0..<bytes.count {
            #expect(Self.parse(bytes, cuts: [cut]) == expected, "cut at \(cut)")
        }
    }

    @Test(arguments: [
        ("unmasked text", frame(0x1, [1], masked: false), UInt16(1002)),
        ("unmasked close", frame(0x8, [3, 232], masked: false), 1002),
        ("rsv1", frame(0x1, [1], rsv: 4), 1002),
        ("rsv2", frame(0x1, [1], rsv: 2), 1002),
        ("rsv3", frame(0x1, [1], rsv: 1), 1002),
        ("opcode 3", frame(0x3, [1]), 1002),
        ("opcode 7", frame(0x7, [1]), 1002),
        ("opcode 0xB", frame(0xB, [1]), 1002),
        ("opcode 0xF", frame(0xF, [1]), 1002),
        ("fragmented ping", frame(0x9, [1], fin: false), 1002),
        ("fragmented close", frame(0x8, [3, 232], fin: false), 1002),
        ("ping of 126 bytes", frame(0x9, [UInt8](repeating: 1, count: 126)), 1002),
        ("close of 126 bytes", frame(0x8, [3, 232] + [UInt8](repeating: 0x61, count: 124)), 1002),
        ("16-bit length under 126", frame(0x1, [1, 2, 3, 4, 5], longForm: 16), 1002),
        ("64-bit length under 65536", frame(0x1, [1, 2, 3], longForm: 64), 1002),
        ("64-bit length with its top bit", [0x81, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4], 1002),
        ("continuation without a start", frame(0x0, [1]), 1002),
        ("text inside a fragmented text", frame(0x1, [1], fin: false) + frame(0x1, [2]), 1002),
        ("binary inside a fragmented text", frame(0x1, [1], fin: false) + frame(0x2, [2]), 1002),
    ] as [(String, [UInt8], UInt16)])
    func rulesBrokenAtTheHeaderFailTheConnection(name: String, bytes: [UInt8], code: UInt16) {
        let outcomes = Self.parse(bytes)
        #expect(outcomes.last == .failure(code), "\(name): \(outcomes)")
        // Split anywhere, the same failure, and nothing after it.
        for cut in 1..<bytes.count {
            let split = Self.parse(bytes, cuts: [cut])
            #expect(split.last == .failure(code) && split.filter { if case .failure = $0 { true } else { false } }.count == 1,
                    "\(name) cut at \(cut): \(split)")
        }
    }

    @Test func aDeclaredLengthOverTheLimitFailsWith1009BeforeItsPayload() {
        // Only the header (and its key) arrives: 1009 at once.
        let header = Array(Self.frame(0x2, [], length: 1 << 40).prefix(14))
        #expect(Self.parse(header, limit: 1000) == [.failure(1009)])
        #expect(Self.parse(Array(Self.frame(0x1, [], length: 1001).prefix(8)), limit: 1000) == [.failure(1009)])
        #expect(Self.parse(Self.frame(0x1, [UInt8](repeating: 0x61, count: 1000)), limit: 1000)
            == [.message(.text, [UInt8](repeating: 0x61, count: 1000))])
        // Fragments that add up past the limit: 1009 at the header of the one that does.
        let fragments = Self.frame(0x2, [UInt8](repeating: 1, count: 600), fin: false)
            + Array(Self.frame(0x0, [], length: 401).prefix(8))
        #expect(Self.parse(fragments, limit: 1000) == [.failure(1009)])
    }

    @Test func nothingIsReadAfterAFailure() {
        let bytes = Self.frame(0x1, [1], masked: false) + Self.frame(0x1, Array("after".utf8))
        #expect(Self.parse(bytes) == [.failure(1002)])
    }

    @Test func closePayloadsAreCheckedAsRFC6455Says() {
        #expect(CloseFramePayload.parse([]) == .valid(nil, ""))
        #expect(CloseFramePayload.parse([0x03]) == .invalid(.protocolError, "close payload of one byte"))
        #expect(CloseFramePayload.parse([0x03, 0xe8] + Array("bye €".utf8)) == .valid(.normal, "bye €"))
        for code: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535] {
            guard case .invalid(.protocolError, _) = CloseFramePayload.parse([UInt8(code >> 8), UInt8(code & 0xff)]) else {
                Issue.record("code \(code) accepted")
                continue
            }
        }
        for code: UInt16 in [1000, 1001, 1002, 1003, 1007, 1011, 1014, 3000, 4999] {
            #expect(CloseFramePayload.parse([UInt8(code >> 8), UInt8(code & 0xff)]) == .valid(WebSocketCloseCode(code), ""))
        }
        #expect(CloseFramePayload.parse([0x03, 0xe8, 0xff, 0xfe]) == .invalid(.invalidPayload, "close reason is not UTF-8"))
        // This side's reason: at most 123 bytes, cut between scalars.
        let long = String(repeating: "€", count: 50)
        let cut = CloseFramePayload.truncatedReason(long)
        #expect(cut.count == 123)
        #expect(String(validating: cut, as: UTF8.self) == String(repeating: "€", count: 41))
    }
}
