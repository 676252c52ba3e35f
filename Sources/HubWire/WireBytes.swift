import HubValue

/// Byte-level helpers shared by the wire encoders: append ASCII, integers and
/// JSON strings to a byte buffer without intermediate `String`s.
public enum WireBytes {
    /// Appends the bytes of a static ASCII string.
    @inline(__always)
    static func append(_ text: StaticString, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends the decimal digits of `value`.
    @inline(__always)
    public static func append(_ value: UInt64, to buffer: inout [UInt8]) {
        if value < 10 {
            buffer.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
            return
        }
        appendDigits(value, to: &buffer)
    }

    /// Appends the decimal form of `value`, with a `-` when negative.
    @inline(__always)
    public static func append(_ value: Int64, to buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        append(value.magnitude, to: &buffer)
    }

    /// Appends a (non-negative) count.
    @inline(__always)
    static func append(_ value: Int, to buffer: inout [UInt8]) {
        append(Int64(value), to: &buffer)
    }

    private static func appendDigits(_ value: UInt64, to buffer: inout [UInt8]) {
        // At most 20 digits; produced backwards into a 24-byte stack tuple.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { raw in
            var magnitude = value
            var position = 24
            repeat {
                position -= 1
                raw[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[position..<24]))
        }
    }

    /// Appends `text` as a JSON string (quoted and escaped as the value writer does).
    @inline(__always)
    static func appendString(_ text: String, to buffer: inout [UInt8]) {
        Value.string(text).writeJSON(into: &buffer)
    }
}
