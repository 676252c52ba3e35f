/// Finds, eight bytes at a time, where a run of string bytes that need no special
/// handling ends: the JSON parser's and writer's fast path over the body of a string.
///
/// A byte is special when it is below 0x20 (a control character), `"` or `\`, and,
/// for the parser (`stopAtNonASCII`), 0x80 or above (the start or middle of a
/// multi-byte scalar, which it validates). Each eight-byte word is tested with the
/// usual word-at-a-time tricks, whose yes/no answer is exact; a word that holds a
/// special byte is then walked byte by byte.
enum JSONStringScan {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// Whether a byte of `word` is zero.
    @inline(__always)
    private static func hasZeroByte(_ word: UInt64) -> Bool {
        (word &- ones) & ~word & highs != 0
    }

    /// Whether `word` holds a special byte.
    @inline(__always)
    private static func hasSpecialByte(_ word: UInt64, stopAtNonASCII: Bool) -> Bool {
        // Below 0x20: subtracting 0x20 from such a byte borrows into its high bit.
        let control = (word &- 0x20 &* ones) & ~word & highs != 0
        let quote = hasZeroByte(word ^ (0x22 &* ones))
        let backslash = hasZeroByte(word ^ (0x5C &* ones))
        return control || quote || backslash || (stopAtNonASCII && word & highs != 0)
    }

    @inline(__always)
    private static func isSpecial(_ byte: UInt8, stopAtNonASCII: Bool) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || (stopAtNonASCII && byte >= 0x80)
    }

    /// The index of the first special byte of `bytes[start..<end]`, or `end`.
    @inline(__always)
    static func firstSpecial(in bytes: UnsafePointer<UInt8>, from start: Int, to end: Int, stopAtNonASCII: Bool) -> Int {
        var i = start
        let raw = UnsafeRawPointer(bytes)
        while i + 8 <= end {
            let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            if hasSpecialByte(word, stopAtNonASCII: stopAtNonASCII) { break }
            i += 8
        }
        while i < end, !isSpecial(bytes[i], stopAtNonASCII: stopAtNonASCII) { i += 1 }
        return i
    }
}
