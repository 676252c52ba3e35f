@testable import HubTransport
import Testing

/// The one frame header encoder and the masking, byte for byte (no socket).
@Suite("Frame encoding")
struct FrameEncodingTests {
    private func header(_ kind: WebSocketMessageKind, _ length: Int, key: UInt32? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        FrameHeader.append(to: &bytes, kind: kind, payloadLength: length, maskingKey: key)
        #expect(bytes.count == FrameHeader.length(payloadLength: length, masked: key != nil))
        return bytes
    }

    @Test func headersUseTheShortestLengthEncoding() {
        #expect(header(.text, 0) == [0x81, 0x00])
        #expect(header(.binary, 125) == [0x82, 0x7D])
        #expect(header(.text, 126) == [0x81, 0x7E, 0x00, 0x7E])
        #expect(header(.binary, 65_535) == [0x82, 0x7E, 0xFF, 0xFF])
        #expect(header(.binary, 65_536) == [0x82, 0x7F, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00])
        #expect(header(.text, 0x0102_0304_0506) == [0x81, 0x7F, 0, 0, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06])
    }

    @Test func maskedHeadersSetTheMaskBitAndCarryTheKeyInNetworkOrder() {
        #expect(header(.text, 5, key: 0x0A0B_0C0D) == [0x81, 0x85, 0x0A, 0x0B, 0x0C, 0x0D])
        #expect(header(.binary, 300, key: 0xFF00_FF00) == [0x82, 0xFE, 0x01, 0x2C, 0xFF, 0x00, 0xFF, 0x00])
    }

    /// The eight-bytes-at-a-time XOR matches the byte-wise definition at every length and
    /// start offset (unaligned included), and masking twice gives the payload back.
    @Test func maskingMatchesTheBytewiseDefinition() {
        let key: UInt32 = 0x3779_B9A5
        let keyBytes: [UInt8] = [0x37, 0x79, 0xB9, 0xA5]
        for start in 0..<9 {
            for length in 0..<40 {
                let original = patternBytes(count: start + length, seed: UInt64(length))
                var masked = original
                WebSocketMasking.apply(key: key, to: &masked, from: start)
                var expected = original
                for offset in 0..<length { expected[start + offset] ^= keyBytes[offset % 4] }
                #expect(masked == expected, "start \(start), length \(length)")
                WebSocketMasking.apply(key: key, to: &masked, from: start)
                #expect(masked == original)
            }
        }
    }

    @Test func maskingKeysComeFreshFromTheRandomSource() {
        var masking = WebSocketMasking()
        let keys = (0..<200).map { _ in masking.nextKey() }
        // 200 keys over several refills of 64: a stuck or repeating source would show.
        #expect(Set(keys).count > 190)
    }
}
