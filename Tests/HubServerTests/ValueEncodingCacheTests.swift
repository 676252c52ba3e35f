@testable import HubServer
import HubValue
import HubWire
import Testing

/// The encode-once cache: a value shared by a fan-out is encoded once, and the bytes it
/// hands out are the value's JSON whatever came before.
@Suite("ValueEncodingCache")
struct ValueEncodingCacheTests {
    @Test func aSharedValueIsEncodedOnceAndOthersFreshly() {
        let cache = ValueEncodingCache()
        let shared = Value.object(["name": .string("a long enough string value"), "n": .int(7)])
        var expected: [UInt8] = []
        shared.writeJSON(into: &expected)
        for _ in 0..<3 { #expect(Array(cache.encoded(shared)) == expected) }
        #expect(cache.misses == 1)
        #expect(cache.hits == 2)
        // A scalar is not cached, and does not disturb the cached value's bytes.
        #expect(Array(cache.encoded(.int(42))) == Array("42".utf8))
        #expect(Array(cache.encoded(shared)) == expected)
        // A larger value than any before grows the storage.
        let large = Value.string(String(repeating: "z", count: 10_000))
        var largeJSON: [UInt8] = []
        large.writeJSON(into: &largeJSON)
        #expect(Array(cache.encoded(large)) == largeJSON)
        var appended: [UInt8] = [0x5B]
        cache.append(large, to: &appended)
        #expect(appended == [0x5B] + largeJSON)
        cache.clear()
        #expect(Array(cache.encoded(shared)) == expected)
    }

    @Test func theSessionsNextTailIsTheEnvelopes() {
        #expect(Array(SessionOutbound.nextTail) == NextEnvelope.tail)
    }
}
