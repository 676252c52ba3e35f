import OrderedCollections

/// The JSON reader behind ``Value/parse(_:maxDepth:)-(UnsafeRawBufferPointer,_)``:
/// a recursive-descent parser over a raw byte buffer with an explicit depth limit.
struct JSONParser {
    private let bytes: UnsafePointer<UInt8>
    private let end: Int
    private let maxDepth: Int
    private var index = 0
    private var depth = 0
    /// Reused buffer for strings that contain escapes.
    private var scratch: [UInt8] = []
    /// Elements and member values of the open arrays and objects, innermost
    /// last; each container is copied out with its exact size when it closes
    /// (one allocation instead of a chain of growing ones).
    private var valueStack: [Value] = []
    /// Member keys of the open objects, innermost last.
    private var keyStack: [String] = []

    init(bytes: UnsafePointer<UInt8>, count: Int, maxDepth: Int) {
        self.bytes = bytes
        self.end = count
        self.maxDepth = maxDepth
        valueStack.reserveCapacity(32)
        keyStack.reserveCapacity(16)
    }

    mutating func parseDocument() throws(JSONError) -> Value {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        if index != end {
            throw JSONError(
                code: .trailingCharacters, offset: index,
                reason: "unexpected \(describe(bytes[index])) after the JSON value"
            )
        }
        return value
    }

    // MARK: Structure

    @inline(__always)
    private mutating func skipWhitespace() {
        while index < end {
            let c = bytes[index]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 {
                index += 1
            } else {
                return
            }
        }
    }

    private mutating func parseValue() throws(JSONError) -> Value {
        guard index < end else {
            throw JSONError(code: .unexpectedEnd, offset: index, reason: "expected a value, found the end of the input")
        }
        switch bytes[index] {
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "{"):
            return try parseObject()
        case UInt8(ascii: "["):
            return try parseArray()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        case UInt8(ascii: "t"):
            try parseLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try parseLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try parseLiteral("null")
            return .null
        case let c:
            throw JSONError(code: .unexpectedCharacter, offset: index, reason: "expected a value, found \(describe(c))")
        }
    }

    private mutating func parseLiteral(_ word: StaticString) throws(JSONError) {
        let expected = word.utf8Start
        for k in 0..<word.utf8CodeUnitCount {
            guard index < end else {
                throw JSONError(code: .unexpectedEnd, offset: index, reason: "unexpected end of the input inside '\(word)'")
            }
            guard bytes[index] == expected[k] else {
                throw JSONError(
                    code: .unexpectedCharacter, offset: index,
                    reason: "unexpected \(describe(bytes[index])) inside '\(word)'"
                )
            }
            index += 1
        }
    }

    private mutating func enter() throws(JSONError) {
        depth += 1
        if depth > maxDepth {
            throw JSONError(code: .tooDeep, offset: index, reason: "nesting deeper than \(maxDepth) levels")
        }
    }

    private mutating func parseArray() throws(JSONError) -> Value {
        try enter()
        index += 1  // '['
        skipWhitespace()
        if index < end && bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array([])
        }
        let base = valueStack.count
        while true {
            skipWhitespace()
            let element = try parseValue()
            valueStack.append(element)
            skipWhitespace()
            guard index < end else {
                throw JSONError(code: .unexpectedEnd, offset: index, reason: "expected ',' or ']' after array element, found the end of the input")
            }
            let c = bytes[index]
            if c == UInt8(ascii: ",") {
                index += 1
            } else if c == UInt8(ascii: "]") {
                index += 1
                break
            } else {
                throw JSONError(code: .unexpectedCharacter, offset: index, reason: "expected ',' or ']' after array element")
            }
        }
        depth -= 1
        let elements = Array(valueStack[base...])
        valueStack.removeSubrange(base...)
        return .array(elements)
    }

    private mutating func parseObject() throws(JSONError) -> Value {
        try enter()
        index += 1  // '{'
        skipWhitespace()
        if index < end && bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object([:])
        }
        let base = valueStack.count
        let keyBase = keyStack.count
        while true {
            skipWhitespace()
            guard index < end else {
                throw JSONError(code: .unexpectedEnd, offset: index, reason: "expected a string key, found the end of the input")
            }
            guard bytes[index] == UInt8(ascii: "\"") else {
                throw JSONError(code: .unexpectedCharacter, offset: index, reason: "expected a string key, found \(describe(bytes[index]))")
            }
            let key = try parseString()
            skipWhitespace()
            guard index < end else {
                throw JSONError(code: .unexpectedEnd, offset: index, reason: "expected ':' after object key, found the end of the input")
            }
            guard bytes[index] == UInt8(ascii: ":") else {
                throw JSONError(code: .unexpectedCharacter, offset: index, reason: "expected ':' after object key")
            }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            keyStack.append(key)
            valueStack.append(value)
            skipWhitespace()
            guard index < end else {
                throw JSONError(code: .unexpectedEnd, offset: index, reason: "expected ',' or '}' after object member, found the end of the input")
            }
            let c = bytes[index]
            if c == UInt8(ascii: ",") {
                index += 1
            } else if c == UInt8(ascii: "}") {
                index += 1
                break
            } else {
                throw JSONError(code: .unexpectedCharacter, offset: index, reason: "expected ',' or '}' after object member")
            }
        }
        depth -= 1
        let members = makeObject(keyBase: keyBase, valueBase: base)
        keyStack.removeSubrange(keyBase...)
        valueStack.removeSubrange(base...)
        return .object(members)
    }

    /// The object whose members are on the stacks from the given bases;
    /// for a repeated key the last value wins, at the first one's position.
    private func makeObject(keyBase: Int, valueBase: Int) -> Value.Object {
        let count = keyStack.count - keyBase
        var unique = true
        if count <= 16 {
            outer: for i in keyBase..<keyStack.count {
                // Comparing UTF-8 lengths first skips most full comparisons.
                for j in (i + 1)..<keyStack.count
                where keyStack[i].utf8.count == keyStack[j].utf8.count && keyStack[i] == keyStack[j] {
                    unique = false
                    break outer
                }
            }
            if unique {
                return Value.Object(
                    uncheckedUniqueKeys: keyStack[keyBase...],
                    values: valueStack[valueBase...]
                )
            }
        }
        var members = Value.Object(minimumCapacity: count)
        for k in 0..<count {
            members[keyStack[keyBase + k]] = valueStack[valueBase + k]
        }
        return members
    }

    // MARK: Strings

    /// Parses a string starting at its opening quote; leaves `index` after the closing quote.
    private mutating func parseString() throws(JSONError) -> String {
        index += 1  // '"'
        let start = index
        var i = index
        // Plain printable ASCII is the common case: step over it eight bytes at a time.
        while i < end {
            i = JSONStringScan.firstSpecial(in: bytes, from: i, to: end, stopAtNonASCII: true)
            guard i < end else { break }
            let c = bytes[i]
            index = i
            if c == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeBufferPointer(start: bytes + start, count: i - start), as: UTF8.self)
                index = i + 1
                return text
            } else if c == UInt8(ascii: "\\") {
                return try parseEscapedString(from: start)
            } else if c < 0x20 {
                throw controlCharacter(c)
            } else {
                try skipMultiByteScalar()
                i = index
            }
        }
        index = i
        throw JSONError(code: .unexpectedEnd, offset: index, reason: "unterminated string")
    }

    /// The slow path: the string from `start` contains escapes; `index` is at the first backslash.
    private mutating func parseEscapedString(from start: Int) throws(JSONError) -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: bytes + start, count: index - start))
        while index < end {
            let c = bytes[index]
            if c == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: scratch, as: UTF8.self)
            } else if c == UInt8(ascii: "\\") {
                try parseEscape()
            } else if c < 0x20 {
                throw controlCharacter(c)
            } else if c < 0x80 {
                scratch.append(c)
                index += 1
            } else {
                let first = index
                try skipMultiByteScalar()
                scratch.append(contentsOf: UnsafeBufferPointer(start: bytes + first, count: index - first))
            }
        }
        throw JSONError(code: .unexpectedEnd, offset: index, reason: "unterminated string")
    }

    private func controlCharacter(_ c: UInt8) -> JSONError {
        JSONError(
            code: .controlCharacter, offset: index,
            reason: "raw control character \(describe(c)) in a string (escape it)"
        )
    }

    /// Decodes one escape at `index` (a backslash) into `scratch`.
    private mutating func parseEscape() throws(JSONError) {
        let escapeStart = index
        guard index + 1 < end else {
            throw JSONError(code: .unexpectedEnd, offset: end, reason: "unterminated string")
        }
        let c = bytes[index + 1]
        index += 2
        switch c {
        case UInt8(ascii: "\""): scratch.append(0x22)
        case UInt8(ascii: "\\"): scratch.append(0x5C)
        case UInt8(ascii: "/"): scratch.append(0x2F)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try parseHex4(escapeStart: escapeStart)
            var scalar: UInt32
            switch unit {
            case 0xD800...0xDBFF:
                guard index + 1 < end, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw JSONError(code: .invalidSurrogate, offset: escapeStart, reason: "high surrogate \\u\(hex(unit)) is not followed by a low surrogate escape")
                }
                let lowStart = index
                index += 2
                let low = try parseHex4(escapeStart: lowStart)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw JSONError(code: .invalidSurrogate, offset: escapeStart, reason: "high surrogate \\u\(hex(unit)) is followed by \\u\(hex(low)), not a low surrogate")
                }
                scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            case 0xDC00...0xDFFF:
                throw JSONError(code: .invalidSurrogate, offset: escapeStart, reason: "lone low surrogate \\u\(hex(unit))")
            default:
                scalar = UInt32(unit)
            }
            appendUTF8(scalar)
        default:
            throw JSONError(code: .invalidEscape, offset: escapeStart, reason: "invalid escape '\\\(describeRaw(c))'")
        }
    }

    /// Reads the four hex digits of a `\u` escape at `index`.
    private mutating func parseHex4(escapeStart: Int) throws(JSONError) -> UInt16 {
        var unit: UInt16 = 0
        for _ in 0..<4 {
            guard index < end else {
                throw JSONError(code: .unexpectedEnd, offset: index, reason: "unterminated \\u escape")
            }
            let c = bytes[index]
            let digit: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c &- UInt8(ascii: "a") &+ 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c &- UInt8(ascii: "A") &+ 10
            default:
                throw JSONError(code: .invalidEscape, offset: escapeStart, reason: "\\u must be followed by four hex digits")
            }
            unit = unit << 4 | UInt16(digit)
            index += 1
        }
        return unit
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | (scalar >> 6)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | (scalar >> 12)))
            scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        default:
            scratch.append(UInt8(0xF0 | (scalar >> 18)))
            scratch.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        }
    }

    /// Validates one multi-byte UTF-8 scalar at `index` (``UTF8Validation``) and steps
    /// over it.
    @inline(__always)
    private mutating func skipMultiByteScalar() throws(JSONError) {
        guard let length = UTF8Validation.multiByteScalarLength(bytes, at: index, end: end) else {
            throw invalidUTF8(at: index)
        }
        index += length
    }

    private func invalidUTF8(at offset: Int) -> JSONError {
        JSONError(code: .invalidUTF8, offset: offset, reason: "malformed UTF-8 sequence starting with byte 0x\(hex(bytes[offset]))")
    }

    // MARK: Numbers

    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    @inline(__always)
    private func isDigit(at position: Int) -> Bool {
        position < end && bytes[position] &- UInt8(ascii: "0") < 10
    }

    private mutating func parseNumber() throws(JSONError) -> Value {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        // Every digit (integer and fraction part) accumulates here while it fits.
        var mantissa: UInt64 = 0
        var digitCount = 0
        var mantissaOverflow = false
        @inline(__always) func accumulate(_ c: UInt8) {
            let digit = UInt64(c &- UInt8(ascii: "0"))
            let (times10, o1) = mantissa.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(digit)
            if o1 || o2 { mantissaOverflow = true } else { mantissa = sum }
            digitCount += 1
        }
        guard isDigit(at: index) else {
            if index < end {
                throw JSONError(code: .invalidNumber, offset: index, reason: "expected a digit, found \(describe(bytes[index]))")
            }
            throw JSONError(code: .invalidNumber, offset: index, reason: "expected a digit, found the end of the input")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if isDigit(at: index) {
                throw JSONError(code: .invalidNumber, offset: index, reason: "leading zeros are not allowed")
            }
        } else {
            while isDigit(at: index) {
                accumulate(bytes[index])
                index += 1
            }
        }
        var isInteger = true
        var exponent = 0
        if index < end && bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard isDigit(at: index) else {
                throw JSONError(code: .invalidNumber, offset: index, reason: "expected a digit after the decimal point")
            }
            while isDigit(at: index) {
                accumulate(bytes[index])
                exponent -= 1
                index += 1
            }
        }
        if index < end && (bytes[index] | 0x20) == UInt8(ascii: "e") {
            isInteger = false
            index += 1
            var exponentNegative = false
            if index < end && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) {
                exponentNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            guard isDigit(at: index) else {
                throw JSONError(code: .invalidNumber, offset: index, reason: "expected a digit in the exponent")
            }
            var explicit = 0
            while isDigit(at: index) {
                if explicit < 1_000_000 {
                    explicit = explicit * 10 + Int(bytes[index] &- UInt8(ascii: "0"))
                }
                index += 1
            }
            exponent += exponentNegative ? -explicit : explicit
        }
        if isInteger && !mantissaOverflow {
            if negative {
                if mantissa <= UInt64(Int64.max) {
                    return .int(-Int64(mantissa))
                } else if mantissa == UInt64(Int64.max) + 1 {
                    return .int(.min)
                }
            } else if mantissa <= UInt64(Int64.max) {
                return .int(Int64(mantissa))
            }
        }
        // Clinger's fast path: both the mantissa and the power of ten are exact doubles.
        if !mantissaOverflow && mantissa <= 1 << 53 && exponent >= -22 && exponent <= 22 {
            var value = Double(mantissa)
            if exponent >= 0 {
                value *= JSONParser.powersOfTen[exponent]
            } else {
                value /= JSONParser.powersOfTen[-exponent]
            }
            return .double(negative ? -value : value)
        }
        let text = String(decoding: UnsafeBufferPointer(start: bytes + start, count: index - start), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONError(code: .invalidNumber, offset: start, reason: "number \(text) does not fit a finite double")
        }
        return .double(value)
    }
}
