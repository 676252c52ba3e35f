import Foundation
import HubValue
import Testing
import HubTesting

@Suite("Value JSON parser")
struct JSONParserTests {
    // MARK: Valid documents

    @Test func parsesEveryKindOfValue() throws {
        let v = try Value.parse(#"{"a":1,"b":[true,false,null],"c":{"d":"e"},"f":-2.5,"g":""}"#)
        let expected: Value = ["a": 1, "b": [true, false, nil], "c": ["d": "e"], "f": -2.5, "g": ""]
        #expect(identical(v, expected))
    }

    @Test func topLevelScalarsAndWhitespace() throws {
        #expect(identical(try Value.parse(" \n\t\r 1 \n"), .int(1)))
        #expect(identical(try Value.parse("null"), .null))
        #expect(identical(try Value.parse("true"), .bool(true)))
        #expect(identical(try Value.parse("false"), .bool(false)))
        #expect(identical(try Value.parse(#""x""#), .string("x")))
        #expect(identical(try Value.parse("0"), .int(0)))
        #expect(identical(try Value.parse("-0"), .int(0)))
        #expect(identical(try Value.parse("[ ]"), .array([])))
        #expect(identical(try Value.parse("{ }"), .object([:])))
        #expect(identical(try Value.parse(" [ 1 , { \"k\" : [ ] } ] "), .array([1, ["k": []]])))
    }

    @Test func int64BoundariesStayExact() throws {
        #expect(identical(try Value.parse("9223372036854775807"), .int(.max)))
        #expect(identical(try Value.parse("-9223372036854775808"), .int(.min)))
        #expect(identical(try Value.parse("-9223372036854775807"), .int(.min + 1)))
        #expect(identical(try Value.parse("9007199254740993"), .int(9_007_199_254_740_993)))
    }

    @Test func integersBeyondInt64BecomeDoubles() throws {
        #expect(identical(try Value.parse("9223372036854775808"), .double(9_223_372_036_854_775_808.0)))
        #expect(identical(try Value.parse("-9223372036854775809"), .double(-9_223_372_036_854_775_809.0)))
        #expect(identical(try Value.parse("18446744073709551616"), .double(18_446_744_073_709_551_616.0)))
        let hundredDigits = "1" + String(repeating: "0", count: 99)
        #expect(identical(try Value.parse(hundredDigits), .double(1e99)))
    }

    @Test func fractionsAndExponentsAreDoubles() throws {
        #expect(identical(try Value.parse("1.5"), .double(1.5)))
        #expect(identical(try Value.parse("-0.0"), .double(-0.0)))
        #expect(identical(try Value.parse("1e2"), .double(100)))
        #expect(identical(try Value.parse("1E-2"), .double(0.01)))
        #expect(identical(try Value.parse("1e+2"), .double(100)))
        #expect(identical(try Value.parse("0.1"), .double(0.1)))
        #expect(identical(try Value.parse("0.30000000000000004"), .double(0.30000000000000004)))
        #expect(identical(try Value.parse("2.2250738585072014e-308"), .double(2.2250738585072014e-308)))
        #expect(identical(try Value.parse("4.9e-324"), .double(.leastNonzeroMagnitude)))
        #expect(identical(try Value.parse("1e-400"), .double(0)))
        #expect(identical(try Value.parse("1.7976931348623157e308"), .double(.greatestFiniteMagnitude)))
        #expect(identical(try Value.parse("123456789012345678901234567890.5"), .double(123456789012345678901234567890.5)))
        #expect(identical(try Value.parse("1e0001"), .double(10)))
    }

    /// The parser's fast path and fallback agree with the standard library's
    /// correctly rounded conversion on random decimal numbers.
    @Test(arguments: 0..<4)
    func numbersMatchStandardLibrary(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<2000 {
            let digits = Int.random(in: 1...22, using: &rng)
            var text = Bool.random(using: &rng) ? "-" : ""
            text += String(Int.random(in: 1...9, using: &rng))
            for _ in 1..<digits { text += String(Int.random(in: 0...9, using: &rng)) }
            if Bool.random(using: &rng) {
                let point = Int.random(in: 1...text.count, using: &rng)
                let index = text.index(text.startIndex, offsetBy: point)
                if text[text.index(before: index)] != "-" { text.insert(".", at: index) }
                if text.last == "." { text += "5" }
            }
            if Bool.random(using: &rng) { text += "e\(Int.random(in: -330...310, using: &rng))" }
            let expected = Double(text)
            guard let expected, expected.isFinite else {
                #expect(parseError(text)?.code == .invalidNumber, "\(text)")
                continue
            }
            switch try Value.parse(text) {
            case let .int(i): #expect(Double(i) == expected, "\(text)")
            case let .double(d): #expect(d.bitPattern == expected.bitPattern, "\(text)")
            default: Issue.record("\(text) is not a number")
            }
        }
    }

    @Test func everyEscape() throws {
        let v = try Value.parse(#""\"\\\/\b\f\n\r\t""#)
        #expect(v == .string("\"\\/\u{8}\u{c}\n\r\t"))
        #expect(try Value.parse(#""\u0041\u00e9\u20AC\u0000""#) == .string("Aé€\u{0}"))
        #expect(try Value.parse(#""plain \u00E9 text""#) == .string("plain é text"))
    }

    @Test func surrogatePairsAndEmoji() throws {
        #expect(try Value.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try Value.parse(#""\uD834\uDD1E""#) == .string("𝄞"))
        #expect(try Value.parse(#""\udbff\udfff""#) == .string("\u{10FFFF}"))
        #expect(try Value.parse("\"😀 中文 é\"") == .string("😀 中文 é"))
        #expect(try Value.parse("\"é\\n😀\\u00e9\"") == .string("é\n😀é"))
        #expect(try Value.parse(#"{"😀":"\ud83d\ude00"}"#) == ["😀": "😀"])
    }

    @Test func duplicateKeysLastWinsAndOrderIsKept() throws {
        let v = try Value.parse(#"{"z":1,"a":2,"m":3,"a":4}"#)
        #expect(v.objectValue.map { Array($0.keys) } == ["z", "a", "m"])
        #expect(v["a"] == 4)
        #expect(v.jsonString() == #"{"z":1,"a":4,"m":3}"#)
    }

    @Test func depthLimit() throws {
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(try Value.parse(ok).arrayValue != nil)
        let tooDeep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        #expect(throws: JSONError.self) { try Value.parse(tooDeep) }
        #expect(try Value.parse("[[[1]]]", maxDepth: 3) == [[[1]]])
        #expect(parseError("[[{\"a\":[1]}]]", maxDepth: 3)?.code == .tooDeep)
        #expect(parseError("[[{\"a\":[1]}]]", maxDepth: 3)?.offset == 7)
    }

    @Test func hostileNestingIsAnErrorNotACrash() {
        let bytes = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        let error = parseError(bytes)
        #expect(error?.code == .tooDeep)
        #expect(error?.offset == 512)
        let objects = Array(String(repeating: #"{"a":"#, count: 100_000).utf8)
        #expect(parseError(objects)?.code == .tooDeep)
    }

    @Test func everyInputForm() throws {
        let text = #"{"k":[1,2]}"#
        let expected: Value = ["k": [1, 2]]
        #expect(try Value.parse(text) == expected)
        #expect(try Value.parse(Array(text.utf8)) == expected)
        #expect(try Value.parse(Array(("xx" + text).utf8)[2...]) == expected)
        #expect(try Value.parse(Data(text.utf8)) == expected)
        #expect(try Value.parse(text.utf8.lazy.map { $0 }) == expected)  // not contiguous
        let viaRaw = Array(text.utf8).withUnsafeBytes { raw in
            Result { () throws(JSONError) -> Value in try Value.parse(raw) }
        }
        #expect(try viaRaw.get() == expected)
        #expect(throws: JSONError(code: .unexpectedEnd, offset: 0, reason: "expected a value, found the end of the input")) {
            try Value.parse(UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    @Test func messageNamesTheByteAndTheExpectation() {
        let error = parseError(#"{"a":1 "b":2}"#)
        #expect(error?.code == .unexpectedCharacter)
        #expect(error?.message == "byte 7: expected ',' or '}' after object member")
        #expect(error?.code.rawValue == "unexpected_character")
    }

    // MARK: Invalid documents

    struct Invalid: CustomTestStringConvertible, Sendable {
        let bytes: [UInt8]
        let code: JSONError.Code
        let offset: Int
        init(_ text: String, _ code: JSONError.Code, _ offset: Int) {
            self.bytes = Array(text.utf8)
            self.code = code
            self.offset = offset
        }
        init(bytes: [UInt8], _ code: JSONError.Code, _ offset: Int) {
            self.bytes = bytes
            self.code = code
            self.offset = offset
        }
        var testDescription: String {
            let shown = bytes.map { $0 >= 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : "<\(String($0, radix: 16))>" }
            return "\(shown.joined()) → \(code)@\(offset)"
        }
    }

    static let invalidCases: [Invalid] = [
        Invalid("", .unexpectedEnd, 0),
        Invalid("   ", .unexpectedEnd, 3),
        Invalid("[1,]", .unexpectedCharacter, 3),
        Invalid("[1,,2]", .unexpectedCharacter, 3),
        Invalid("[1 2]", .unexpectedCharacter, 3),
        Invalid("[", .unexpectedEnd, 1),
        Invalid("[1,2", .unexpectedEnd, 4),
        Invalid(#"{"a" 1}"#, .unexpectedCharacter, 5),
        Invalid(#"{"a":1,}"#, .unexpectedCharacter, 7),
        Invalid(#"{,}"#, .unexpectedCharacter, 1),
        Invalid(#"{1:2}"#, .unexpectedCharacter, 1),
        Invalid(#"{"a":}"#, .unexpectedCharacter, 5),
        Invalid(#"{"a":1"#, .unexpectedEnd, 6),
        Invalid(#"{'a':1}"#, .unexpectedCharacter, 1),
        Invalid("01", .invalidNumber, 1),
        Invalid("-01", .invalidNumber, 2),
        Invalid("1.", .invalidNumber, 2),
        Invalid("1.e5", .invalidNumber, 2),
        Invalid(".5", .unexpectedCharacter, 0),
        Invalid("-", .invalidNumber, 1),
        Invalid("-a", .invalidNumber, 1),
        Invalid("+1", .unexpectedCharacter, 0),
        Invalid("1e", .invalidNumber, 2),
        Invalid("1e+", .invalidNumber, 3),
        Invalid("1e400", .invalidNumber, 0),
        Invalid("[-1e400]", .invalidNumber, 1),
        Invalid("NaN", .unexpectedCharacter, 0),
        Invalid("Infinity", .unexpectedCharacter, 0),
        Invalid("tru", .unexpectedEnd, 3),
        Invalid("nul", .unexpectedEnd, 3),
        Invalid("trux", .unexpectedCharacter, 3),
        Invalid("True", .unexpectedCharacter, 0),
        Invalid("1 2", .trailingCharacters, 2),
        Invalid("{}x", .trailingCharacters, 2),
        Invalid("[] []", .trailingCharacters, 3),
        Invalid("'a'", .unexpectedCharacter, 0),
        Invalid(#""\x""#, .invalidEscape, 1),
        Invalid(#""ab\'""#, .invalidEscape, 3),
        Invalid(#""\u12""#, .invalidEscape, 1),
        Invalid(#""\uZZZZ""#, .invalidEscape, 1),
        Invalid(#""\"#, .unexpectedEnd, 2),
        Invalid(#""\ud800""#, .invalidSurrogate, 1),
        Invalid(#""\udc00""#, .invalidSurrogate, 1),
        Invalid(#""x\ud800\u0041""#, .invalidSurrogate, 2),
        Invalid(#""\ud800\udbff""#, .invalidSurrogate, 1),
        Invalid(#""\ud800abc""#, .invalidSurrogate, 1),
        Invalid(#""abc"#, .unexpectedEnd, 4),
        Invalid(#"["abc]"#, .unexpectedEnd, 6),
        Invalid(bytes: [0x22, 0x61, 0x01, 0x62, 0x22], .controlCharacter, 2),
        Invalid(bytes: [0x22, 0x61, 0x09, 0x22], .controlCharacter, 2),
        Invalid(bytes: [0x22, 0x0A, 0x22], .controlCharacter, 1),
        Invalid(bytes: [0x22, 0x5C, 0x6E, 0x00, 0x22], .controlCharacter, 3),
        Invalid(bytes: [0x22, 0xFF, 0x22], .invalidUTF8, 1),
        Invalid(bytes: [0x22, 0x80, 0x22], .invalidUTF8, 1),
        Invalid(bytes: [0x22, 0xC0, 0xAF, 0x22], .invalidUTF8, 1),
        Invalid(bytes: [0x22, 0xE0, 0x80, 0xAF, 0x22], .invalidUTF8, 1),
        Invalid(bytes: [0x22, 0xED, 0xA0, 0x80, 0x22], .invalidUTF8, 1),
        Invalid(bytes: [0x22, 0x61, 0xE2, 0x82, 0x22], .invalidUTF8, 2),
        Invalid(bytes: [0x22, 0xE2, 0x82], .invalidUTF8, 1),
        Invalid(bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], .invalidUTF8, 1),
        Invalid(bytes: [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], .invalidUTF8, 1),
        Invalid(bytes: [0x22, 0x5C, 0x6E, 0xC3, 0x28, 0x22], .invalidUTF8, 3),
        Invalid(bytes: [0xFF], .unexpectedCharacter, 0),
        Invalid(bytes: [0xEF, 0xBB, 0xBF, 0x31], .unexpectedCharacter, 0),
    ]

    @Test(arguments: invalidCases)
    func rejectsInvalid(_ case_: Invalid) {
        let error = parseError(case_.bytes)
        #expect(error?.code == case_.code, "\(error?.message ?? "no error")")
        #expect(error?.offset == case_.offset, "\(error?.message ?? "no error")")
        if let error { #expect(error.message.hasPrefix("byte \(case_.offset): ")) }
    }
}

/// The error `Value.parse` throws for `text`, or nil when it parses.
func parseError(_ text: String, maxDepth: Int = Value.defaultMaxDepth) -> JSONError? {
    parseError(Array(text.utf8), maxDepth: maxDepth)
}

/// The error `Value.parse` throws for `bytes`, or nil when it parses.
func parseError(_ bytes: [UInt8], maxDepth: Int = Value.defaultMaxDepth) -> JSONError? {
    do {
        _ = try Value.parse(bytes, maxDepth: maxDepth)
        return nil
    } catch {
        return error
    }
}
