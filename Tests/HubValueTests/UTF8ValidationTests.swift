import HubTesting
import HubValue
import Testing

/// `UTF8Validation` against the standard library's validating `String(validating:as:)`
/// as the reference, on fixed malformed sequences at every offset around the sixteen-byte
/// steps and on random bytes.
@Suite("UTF-8 validation")
struct UTF8ValidationTests {
    private func valid(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { UTF8Validation.isValid($0) }
    }

    private func reference(_ bytes: [UInt8]) -> Bool {
        String(validating: bytes, as: UTF8.self) != nil
    }

    /// Well-formed and malformed sequences (Unicode Table 3-7), each tried after 0 to 40
    /// ASCII bytes and before 0 to 20, so that it falls at every place of a step.
    @Test func sequencesAtEveryOffsetOfTheASCIIFastPath() {
        let wellFormed: [[UInt8]] = [
            [0xC3, 0xA9], [0xE2, 0x82, 0xAC], [0xF0, 0x9D, 0x84, 0x9E], [0xF4, 0x8F, 0xBF, 0xBF],
            [0xEF, 0xBF, 0xBF], [0xED, 0x9F, 0xBF], [0xE0, 0xA0, 0x80], [0xF0, 0x90, 0x80, 0x80],
        ]
        let malformed: [[UInt8]] = [
            [0xFF], [0x80], [0xBF], [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80],
            [0xF0, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80],
            [0xC3], [0xE2, 0x82], [0xF0, 0x9D, 0x84], [0xC3, 0x28], [0xE2, 0x28, 0xA1], [0xF0, 0x9D, 0x28, 0x9E],
        ]
        for before in 0...40 {
            for after in 0...20 {
                let prefix = Array(repeating: UInt8(ascii: "a"), count: before)
                let suffix = Array(repeating: UInt8(ascii: "z"), count: after)
                for sequence in wellFormed {
                    let bytes = prefix + sequence + suffix
                    #expect(valid(bytes), "\(bytes)")
                }
                for sequence in malformed {
                    let bytes = prefix + sequence + suffix
                    #expect(!valid(bytes), "\(bytes)")
                    #expect(reference(bytes) == false)
                }
            }
        }
    }

    @Test func emptyAndPlainASCII() {
        #expect(valid([]))
        #expect(valid(Array(String(repeating: "plain ascii ", count: 100).utf8)))
        #expect(!valid(Array(repeating: UInt8(ascii: "a"), count: 1023) + [0x80]))
    }

    /// Random bytes drawn mostly from ASCII with some lead and continuation bytes: the
    /// answer matches the standard library's on every one.
    @Test func randomBytesAgreeWithTheStandardLibrary() {
        var generator = SeededGenerator(seed: 0x5EED_07F8)
        let pool: [UInt8] = Array(0x20...0x7E) + [0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
                                                   0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        var validCount = 0
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...48, using: &generator)
            var bytes: [UInt8] = []
            for _ in 0..<count {
                // Three in four bytes ASCII, so that some runs are long enough for a step.
                if Int.random(in: 0..<4, using: &generator) > 0 {
                    bytes.append(UInt8.random(in: 0x20...0x7E, using: &generator))
                } else {
                    bytes.append(pool.randomElement(using: &generator)!)
                }
            }
            let expected = reference(bytes)
            #expect(valid(bytes) == expected, "\(bytes)")
            if expected { validCount += 1 }
        }
        // Both answers occur often enough for the comparison to mean something.
        #expect(validCount > 2_000 && validCount < 18_000, "\(validCount)")
    }

    /// Well-formed text of random scalars, then each with one byte replaced.
    @Test func randomTextAndOneByteChanged() {
        var generator = SeededGenerator(seed: 42)
        let scalars: [ClosedRange<UInt32>] = [0x20...0x7E, 0x80...0x7FF, 0x800...0xD7FF, 0xE000...0xFFFF, 0x10000...0x10FFFF]
        for _ in 0..<2_000 {
            var text = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 1...30, using: &generator) {
                let range = scalars.randomElement(using: &generator)!
                text.append(Unicode.Scalar(UInt32.random(in: range, using: &generator))!)
            }
            var bytes = Array(String(text).utf8)
            #expect(valid(bytes))
            bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            #expect(valid(bytes) == reference(bytes), "\(bytes)")
        }
    }
}
