import HubValue
import Testing
import HubTesting

@Suite("Value")
struct ValueTests {
    @Test func numbersCompareByNumericValue() {
        #expect(Value.int(1) == Value.double(1.0))
        #expect(Value.double(1.0) == Value.int(1))
        #expect(Value.int(0) == Value.double(-0.0))
        #expect(Value.int(1) != Value.double(1.5))
        // 2^63 is a double but not an Int64: never equal to Int64.max.
        #expect(Value.int(.max) != Value.double(9_223_372_036_854_775_808.0))
        #expect(Value.int(.min) == Value.double(-9_223_372_036_854_775_808.0))
        // 2^53 + 1 is not representable as a double; the nearest double is 2^53.
        #expect(Value.int((1 << 53) + 1) != Value.double(Double((1 << 53) + 1)))
        #expect(Value.int(1 << 53) == Value.double(Double(1 << 53)))
    }

    @Test func hashIsConsistentWithNumericEquality() {
        #expect(Value.int(1).hashValue == Value.double(1.0).hashValue)
        #expect(Value.int(0).hashValue == Value.double(-0.0).hashValue)
        #expect(Value.int(.min).hashValue == Value.double(-9_223_372_036_854_775_808.0).hashValue)
        let set: Set<Value> = [.int(1), .double(2.5), .string("x")]
        #expect(set.contains(.double(1.0)))
        #expect(set.contains(.double(2.5)))
        #expect(!set.contains(.int(2)))
        #expect(Set<Value>([.int(3), .double(3.0)]).count == 1)
        let nested: Value = ["a": [1, 2.0]]
        let other: Value = ["a": [1.0, 2]]
        #expect(nested == other)
        #expect(nested.hashValue == other.hashValue)
    }

    @Test func objectsCompareAsUnorderedMembers() {
        let ab: Value = ["a": 1, "b": [true]]
        let ba: Value = ["b": [true], "a": 1]
        #expect(ab == ba)
        #expect(ab.hashValue == ba.hashValue)
        #expect(ab != ["a": 1])
        #expect(ab != ["a": 1, "b": [false]])
        #expect(ab != ["a": 1, "c": [true]])
        // ...but the order is kept and written.
        #expect(ab.jsonString() == #"{"a":1,"b":[true]}"#)
        #expect(ba.jsonString() == #"{"b":[true],"a":1}"#)
    }

    @Test func otherKindsNeverEqual() {
        let samples: [Value] = [nil, false, true, 0, 1, 0.5, "", "1", "true", [], [0], [:], ["0": 0]]
        for (i, a) in samples.enumerated() {
            for (j, b) in samples.enumerated() {
                #expect((a == b) == (i == j), "\(a) vs \(b)")
            }
        }
        #expect(Value.array([1, 2]) != Value.array([2, 1]))
    }

    @Test func literals() {
        let v: Value = ["s": "text", "i": -3, "d": 2.5, "b": true, "n": nil, "a": [1, "x", [:]]]
        guard case let .object(o) = v else {
            Issue.record("not an object")
            return
        }
        #expect(Array(o.keys) == ["s", "i", "d", "b", "n", "a"])
        #expect(identical(o["s"]!, .string("text")))
        #expect(identical(o["i"]!, .int(-3)))
        #expect(identical(o["d"]!, .double(2.5)))
        #expect(identical(o["b"]!, .bool(true)))
        #expect(identical(o["n"]!, .null))
        #expect(identical(o["a"]!, .array([.int(1), .string("x"), .object([:])])))
        let duplicate: Value = ["k": 1, "j": 2, "k": 3]
        #expect(duplicate.jsonString() == #"{"k":3,"j":2}"#)
    }

    @Test func accessors() {
        let v: Value = ["price": 101.5, "qty": 300, "tags": ["a", "b"], "ok": true, "none": nil, "whole": 4.0]
        #expect(v["price"]?.doubleValue == 101.5)
        #expect(v[key: "qty"]?.intValue == 300)
        #expect(v["qty"]?.doubleValue == 300)
        #expect(v["whole"]?.intValue == 4)
        #expect(v["price"]?.intValue == nil)
        #expect(v["tags"]?[1]?.stringValue == "b")
        #expect(v["tags"]?[index: 0] == "a")
        #expect(v["tags"]?[2] == nil)
        #expect(v["tags"]?[-1] == nil)
        #expect(v["tags"]?.arrayValue?.count == 2)
        #expect(v["ok"]?.boolValue == true)
        #expect(v["none"]?.isNull == true)
        #expect(v["missing"] == nil)
        #expect(v[0] == nil)
        #expect(v["tags"]?["a"] == nil)
        #expect(v.objectValue?.count == 6)
        #expect(Value.int(1).stringValue == nil)
        #expect(Value.string("1").intValue == nil)
        #expect(Value.bool(true).intValue == nil)
        #expect(Value.int(1).boolValue == nil)
        #expect(Value.null.arrayValue == nil)
        #expect(Value.array([]).objectValue == nil)
        #expect(!Value.bool(false).isNull)
    }

    @Test func descriptionIsCompactJSON() {
        let v: Value = ["op": "next", "id": 17, "value": ["symbol": "ACME", "price": 101.5, "tags": ["a", nil]]]
        #expect(v.description == #"{"op":"next","id":17,"value":{"symbol":"ACME","price":101.5,"tags":["a",null]}}"#)
        #expect("\(Value.string("a\"b"))" == #""a\"b""#)
    }
}
