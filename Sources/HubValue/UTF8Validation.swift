/// Checks that bytes are well-formed UTF-8 (Unicode Table 3-7: no overlong forms, no
/// encoded surrogates, nothing above U+10FFFF, no truncated sequence): the JSON
/// parser's check of a string's multi-byte scalars and the WebSocket transport's check
/// of every inbound text message (RFC 6455 §8.1).
///
/// ASCII, the common case, is stepped over sixteen bytes at a time.
public enum UTF8Validation {
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// Whether `bytes` are well-formed UTF-8.
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let end = bytes.count
        let raw = UnsafeRawPointer(base)
        let pointer = base.assumingMemoryBound(to: UInt8.self)
        var i = 0
        while i < end {
            while i + 16 <= end {
                let words = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    | raw.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)
                if words & highs != 0 { break }
                i += 16
            }
            while i < end, pointer[i] < 0x80 { i += 1 }
            guard i < end else { return true }
            guard let length = multiByteScalarLength(pointer, at: i, end: end) else { return false }
            i += length
        }
        return true
    }

    /// The length of the well-formed multi-byte scalar whose lead byte (0x80 or above)
    /// is at `index` of `bytes[..<end]`, or `nil` when the sequence there is not one.
    @inlinable @inline(__always)
    public static func multiByteScalarLength(_ bytes: UnsafePointer<UInt8>, at index: Int, end: Int) -> Int? {
        let lead = bytes[index]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return nil
        }
        guard index + length <= end else { return nil }
        let second = bytes[index + 1]
        guard second >= low && second <= high else { return nil }
        var k = 2
        while k < length {
            guard bytes[index + k] & 0xC0 == 0x80 else { return nil }
            k += 1
        }
        return length
    }
}
