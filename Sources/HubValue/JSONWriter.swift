extension Value {
    /// Compact JSON (no whitespace) as UTF-8 bytes.
    ///
    /// Object members come out in their stored order. Strings escape `"`, `\`
    /// and control characters (`\n \r \t \b \f`, others as `\u00XX`) and keep
    /// every other character, non-ASCII included, as raw UTF-8. Integers are
    /// exact; doubles use the shortest representation that reads back to the
    /// same `Double` (`1.0`, `0.1`, `1e+300`). A non-finite double (NaN or an
    /// infinity, which JSON cannot express and the parser never produces) is
    /// written as `null`.
    public func jsonBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        writeJSON(into: &out)
        return out
    }

    /// Appends compact JSON (see ``jsonBytes()``) to `buffer`, e.g. a frame
    /// buffer that already holds a header.
    public func writeJSON(into buffer: inout [UInt8]) {
        var writer = JSONWriter(output: buffer)
        buffer = []  // hand the storage over so appends stay unique (no copy)
        writer.write(self)
        buffer = writer.output
    }

    /// Compact JSON (see ``jsonBytes()``) as a `String`.
    public func jsonString() -> String {
        String(decoding: jsonBytes(), as: UTF8.self)
    }

    /// Compact JSON (see ``jsonBytes()``), or `nil` as soon as it grows past `limit` bytes:
    /// the writer stops there, so the work and memory are bounded by `limit` whatever the
    /// value (one whose parts are shared many times over writes out far larger than it is).
    public func jsonBytes(limit: Int) -> [UInt8]? {
        var writer = JSONWriter(output: [], limit: limit)
        writer.write(self)
        return writer.exceeded || writer.output.count > limit ? nil : writer.output
    }

    /// ``jsonBytes(limit:)`` as a `String`.
    public func jsonString(limit: Int) -> String? {
        jsonBytes(limit: limit).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// The JSON writer behind ``Value/jsonBytes()``: appends to a byte array.
struct JSONWriter {
    var output: [UInt8]
    /// The most bytes to write (checked before each value): past it, writing stops and
    /// ``exceeded`` is set.
    let limit: Int
    private(set) var exceeded = false

    init(output: [UInt8], limit: Int = .max) {
        self.output = output
        self.limit = limit
    }

    mutating func write(_ value: Value) {
        guard output.count <= limit else {
            exceeded = true
            return
        }
        switch value {
        case .null:
            appendASCII("null")
        case let .bool(b):
            appendASCII(b ? "true" : "false")
        case let .int(i):
            writeInt(i)
        case let .double(d):
            writeDouble(d)
        case let .string(s):
            writeString(s)
        case let .array(elements):
            output.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                write(element)
                if exceeded { return }
            }
            output.append(UInt8(ascii: "]"))
        case let .object(members):
            output.append(UInt8(ascii: "{"))
            var first = true
            for (key, member) in members {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                writeString(key)
                output.append(UInt8(ascii: ":"))
                write(member)
                if exceeded { return }
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    @inline(__always)
    private mutating func appendASCII(_ text: StaticString) {
        output.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func writeInt(_ value: Int64) {
        if value >= 0 && value < 10 {
            output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
            return
        }
        // Digits are produced backwards into a small stack buffer.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = value.magnitude
            var position = 20
            repeat {
                position -= 1
                digits[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            if value < 0 { output.append(UInt8(ascii: "-")) }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: digits[position..<20]))
        }
    }

    private mutating func writeDouble(_ value: Double) {
        guard value.isFinite else {
            appendASCII("null")
            return
        }
        // Swift's description is the shortest round-trip form and always JSON
        // compatible for finite values: "1.0", "0.1", "1e+300", "5e-324", "-0.0".
        var text = value.description
        text.withUTF8 { output.append(contentsOf: $0) }
    }

    private static let hexDigits: StaticString = "0123456789abcdef"

    /// Writes `string` quoted, escaping `"`, `\` and everything below 0x20.
    private mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            output.append(UInt8(ascii: "\""))
            let count = utf8.count
            guard let base = utf8.baseAddress else {
                output.append(UInt8(ascii: "\""))
                return
            }
            var runStart = 0
            var i = 0
            while i < count {
                // Bytes that need no escape (most of them) are found eight at a time.
                i = JSONStringScan.firstSpecial(in: base, from: i, to: count, stopAtNonASCII: false)
                guard i < count else { break }
                if runStart < i {
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
                }
                writeEscape(utf8[i])
                i += 1
                runStart = i
            }
            if runStart < count {
                output.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<count]))
            }
            output.append(UInt8(ascii: "\""))
        }
    }

    private mutating func writeEscape(_ c: UInt8) {
        let short: UInt8
        switch c {
        case UInt8(ascii: "\""): short = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): short = UInt8(ascii: "\\")
        case 0x0A: short = UInt8(ascii: "n")
        case 0x0D: short = UInt8(ascii: "r")
        case 0x09: short = UInt8(ascii: "t")
        case 0x08: short = UInt8(ascii: "b")
        case 0x0C: short = UInt8(ascii: "f")
        default:
            let hex = JSONWriter.hexDigits.utf8Start
            output.append(contentsOf: [
                UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                hex[Int(c >> 4)], hex[Int(c & 0xF)],
            ])
            return
        }
        output.append(UInt8(ascii: "\\"))
        output.append(short)
    }
}
