import Foundation
import HubValue
import Testing
import HubTesting

@Suite("Value JSON writer")
struct JSONWriterTests {
    @Test func escapes() {
        #expect(Value.string("\"\\\n\r\t\u{8}\u{c}\u{0}\u{1}\u{1f}").jsonString() == #""\"\\\n\r\t\b\f\u0000\u0001\u001f""#)
        #expect(Value.string("a/b\u{7f}").jsonString() == "\"a/b\u{7f}\"")
        #expect(Value.string("é€中😀").jsonBytes() == Array("\"é€中😀\"".utf8))
        #expect(Value.string("").jsonString() == #""""#)
        #expect(Value.object(["k\"\n": .string("v")]).jsonString() == #"{"k\"\n":"v"}"#)
    }

    /// The writer and the parser find special bytes eight at a time: put each kind at
    /// every position of strings of 0 to 27 bytes, against a byte-at-a-time reference.
    @Test func specialBytesAtEveryPositionOfAWord() throws {
        func reference(_ text: String) -> String {
            var out = "\""
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""): out += "\\\""
                case UInt8(ascii: "\\"): out += "\\\\"
                case 0x0A: out += "\\n"
                case 0x0D: out += "\\r"
                case 0x09: out += "\\t"
                case 0x08: out += "\\b"
                case 0x0C: out += "\\f"
                case ..<0x20: out += String(format: "\\u%04x", byte)
                default: out += String(decoding: [byte], as: UTF8.self)
                }
            }
            return out + "\""
        }
        let specials = ["\"", "\\", "\n", "\u{0}", "\u{1f}", "\u{7f}", " ", "~", "é", "€", "😀"]
        for length in 0...27 {
            for position in 0..<max(length, 1) {
                for special in specials {
                    let text = length == 0 ? "" : String(repeating: "a", count: position) + special
                        + String(repeating: "b", count: length - position - 1)
                    let json = Value.string(text).jsonString()
                    if special.utf8.count == 1 || length == 0 {
                        #expect(json == reference(text), "\(Array(text.utf8))")
                    } else {
                        #expect(json == "\"" + text + "\"")
                    }
                    #expect(try Value.parse(json) == .string(text), "\(json)")
                }
            }
        }
        // A raw control character or a bad scalar is found wherever it sits in a word.
        for position in 0..<20 {
            let prefix = Array(repeating: UInt8(ascii: "x"), count: position)
            let raw = [UInt8(ascii: "\"")] + prefix + [0x01] + Array("yyyyyyyyy\"".utf8)
            #expect(throws: JSONError.self) { try Value.parse(raw) }
            let truncated = [UInt8(ascii: "\"")] + prefix + [0xC3] + Array("yyyyyyyyy\"".utf8)
            #expect(throws: JSONError.self) { try Value.parse(truncated) }
        }
    }

    @Test func integersExactly() {
        #expect(Value.int(.min).jsonString() == "-9223372036854775808")
        #expect(Value.int(.max).jsonString() == "9223372036854775807")
        #expect(Value.int(0).jsonString() == "0")
        #expect(Value.int(-1).jsonString() == "-1")
        #expect(Value.int(9).jsonString() == "9")
        #expect(Value.int(10).jsonString() == "10")
        #expect(Value.int(-100).jsonString() == "-100")
    }

    @Test func doublesShortestRoundTrip() {
        #expect(Value.double(1.0).jsonString() == "1.0")
        #expect(Value.double(1e300).jsonString() == "1e+300")
        #expect(Value.double(0.1).jsonString() == "0.1")
        #expect(Value.double(-0.0).jsonString() == "-0.0")
        #expect(Value.double(.leastNonzeroMagnitude).jsonString() == "5e-324")
        #expect(Value.double(101.5).jsonString() == "101.5")
        #expect(Value.double(1e-7).jsonString() == "1e-07")
        #expect(Value.double(1e16).jsonString() == "1e+16")
        #expect(Value.double(0.30000000000000004).jsonString() == "0.30000000000000004")
        for d in [1.0, 1e300, 0.1, -0.0, .leastNonzeroMagnitude, 1e-7, 1e16, .greatestFiniteMagnitude, .leastNormalMagnitude] {
            let parsed = try? Value.parse(Value.double(d).jsonString())
            #expect(parsed.map { identical($0, .double(d)) } == true, "\(d)")
        }
    }

    @Test func nonFiniteDoublesAreNull() {
        #expect(Value.double(.nan).jsonString() == "null")
        #expect(Value.double(.infinity).jsonString() == "null")
        #expect(Value.array([.double(-.infinity)]).jsonString() == "[null]")
    }

    @Test func compactDocumentsReadBackByteForByte() throws {
        let texts = [
            #"{"op":"next","id":17,"value":{"symbol":"ACME","price":101.5,"qty":300,"tags":["a","b"]}}"#,
            #"[null,true,false,0,-1,1.5,"",[],{},[[{}]],{"":{"":[]}}]"#,
            #"{"z":1,"a":2,"😀":"é"}"#,
        ]
        for text in texts {
            #expect(try Value.parse(text).jsonString() == text)
        }
    }

    @Test func appendsIntoAnExistingBuffer() {
        var buffer: [UInt8] = Array("HDR".utf8)
        let v: Value = ["a": [1, "x"]]
        v.writeJSON(into: &buffer)
        #expect(buffer == Array(#"HDR{"a":[1,"x"]}"#.utf8))
        Value.null.writeJSON(into: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == #"HDR{"a":[1,"x"]}null"#)
    }

    @Test(arguments: 0..<20)
    func randomRoundTrip(seed: UInt64) throws {
        var generator = ValueGenerator(seed: seed)
        for _ in 0..<20 {
            let value = generator.value(depth: 0)
            let bytes = value.jsonBytes()
            let parsed = try Value.parse(bytes)
            #expect(parsed == value)
            #expect(parsed.hashValue == value.hashValue)
            #expect(identical(parsed, value), "\(value)")
            #expect(parsed.jsonBytes() == bytes)
        }
    }

    // MARK: Cross-check against Foundation

    /// Our output is read by Foundation as the same document, and Foundation's
    /// output is read by us as the same document.
    @Test(arguments: 0..<10)
    func agreesWithFoundation(seed: UInt64) throws {
        var generator = ValueGenerator(seed: 1000 + seed, wild: false)
        for _ in 0..<10 {
            let value = generator.document()
            let ours = Data(value.jsonBytes())
            let foundation = try JSONSerialization.jsonObject(with: ours, options: [.fragmentsAllowed])
            #expect(matches(value, foundation), "\(value)")
            let theirs = try JSONSerialization.data(withJSONObject: foundation, options: [.fragmentsAllowed])
            let back = try Value.parse(theirs)
            #expect(sameStructure(back, value), "\(String(decoding: theirs, as: UTF8.self))")
        }
    }

    /// Foundation's rendering of documents that a fixed corpus spells in many ways.
    @Test func parsesWhatFoundationParses() throws {
        let texts = [
            #"{"a" : [ 1 , 2.5e3 , -0.125 , true , null ] , "b" : "\u00e9\n\/" }"#,
            #"[9223372036854775807, -9223372036854775808, 1E2, "\ud83d\ude00"]"#,
        ]
        for text in texts {
            let foundation = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
            #expect(matches(try Value.parse(text), foundation), "\(text)")
        }
    }
}

/// Whether a Foundation JSON object has the same structure and values as `value`.
func matches(_ value: Value, _ object: Any) -> Bool {
    switch value {
    case .null:
        return object is NSNull
    case let .bool(b):
        return (object as? NSNumber)?.boolValue == b && !(object is String)
    case let .int(i):
        guard let number = object as? NSNumber else { return false }
        return number.int64Value == i || (i > 1 << 53 || i < -(1 << 53)) && number.doubleValue == Double(i)
    case let .double(d):
        guard let number = object as? NSNumber else { return false }
        return closeEnough(number.doubleValue, d)
    case let .string(s):
        return (object as? String).map { $0.unicodeScalars.elementsEqual(s.unicodeScalars) } ?? false
    case let .array(elements):
        guard let array = object as? [Any], array.count == elements.count else { return false }
        return zip(elements, array).allSatisfy { matches($0, $1) }
    case let .object(members):
        guard let dictionary = object as? [String: Any], dictionary.count == members.count else { return false }
        return members.allSatisfy { key, member in dictionary[key].map { matches(member, $0) } ?? false }
    }
}

/// Foundation's number reader on Linux is not correctly rounded (it reads
/// 3.8262444353903245e-22 five units in the last place off): allow a relative
/// error of 1e-14.
func closeEnough(_ a: Double, _ b: Double) -> Bool {
    a == b || abs(a - b) <= 1e-14 * max(abs(a), abs(b))
}

/// Equal values with integers equal exactly and strings equal scalar for scalar
/// (Foundation may reorder keys and respell numbers).
func sameStructure(_ a: Value, _ b: Value) -> Bool {
    switch (a, b) {
    case let (.string(x), .string(y)):
        return x.unicodeScalars.elementsEqual(y.unicodeScalars)
    case let (.double(x), .double(y)):
        return closeEnough(x, y)
    case let (.array(x), .array(y)):
        return x.count == y.count && zip(x, y).allSatisfy { sameStructure($0, $1) }
    case let (.object(x), .object(y)):
        return x.count == y.count && x.allSatisfy { key, member in y[key].map { sameStructure(member, $0) } ?? false }
    default:
        return a == b
    }
}
