import Foundation
import HubValue
import Testing

@Suite("Value measure and deep values")
struct ValueMeasureTests {
    /// `[[[…x…]]]`, `depth` levels of arrays around `innermost`.
    static func nested(_ depth: Int, around innermost: Value = 0) -> Value {
        var value = innermost
        for _ in 0..<depth { value = .array([value]) }
        return value
    }

    @Test func depthCountsContainersAsTheJSONReaderDoes() throws {
        #expect(Value.int(1).depth == 0)
        #expect(Value.array([]).depth == 1)
        #expect(Value.array([1, [2, [3]]]).depth == 3)
        #expect((["a": ["b": [1]]] as Value).depth == 3)
        // The reader's limit and the measure agree: the deepest value it accepts measures at it.
        let text = String(repeating: "[", count: Value.defaultMaxDepth) + String(repeating: "]", count: Value.defaultMaxDepth)
        #expect(try Value.parse(text).depth == Value.defaultMaxDepth)
    }

    @Test func bytesAreAtLeastTheCompactJSON() {
        let values: [Value] = [
            .null, 1, 1.5, "hello", [1, 2, 3], ["key": "value", "n": [true, false, nil]],
            .string(String(repeating: "x", count: 10_000)),
        ]
        for value in values {
            #expect(value.estimatedBytes >= value.jsonBytes().count, "\(value)")
        }
        #expect(Value.array([1, 2]).estimatedBytes == 32 + 16 + 16)
        #expect(Value.string("abc").estimatedBytes == 19)
    }

    @Test func sharedPartsCountEachTimeAndTheWalkStopsAtTheBound() {
        // {a: x, b: x} forty times over: tiny in memory, 2^40 leaves written out.
        var value: Value = 1
        for _ in 0..<40 { value = ["a": value, "b": value] }
        let measure = value.measure(maxBytes: 1 << 20)
        #expect(measure.exceeded)
        #expect(measure.bytes > 1 << 20)
        // It stopped soon after the bound: the nodes visited are bounded by it.
        #expect(measure.nodes < (1 << 20) / 16 + 64)
        #expect(value.jsonBytes(limit: 1 << 20) == nil)
    }

    @Test func depthBoundStopsTheWalk() {
        let deep = Self.nested(2_000)
        let measure = deep.measure(maxDepth: 512)
        #expect(measure.exceeded)
        #expect(measure.depth == 513)
        #expect(measure.nodes < 520)
        #expect(!Self.nested(512).measure(maxDepth: 512).exceeded)
    }

    @Test func cappedWriterWritesWhatFits() throws {
        let value: Value = ["a": [1, 2, 3], "b": "text"]
        #expect(value.jsonString(limit: 1_000) == value.jsonString())
        #expect(value.jsonString(limit: value.jsonBytes().count) == value.jsonString())
        #expect(value.jsonString(limit: value.jsonBytes().count - 1) == nil)
    }

    /// Every recursive walk over a value (writing, equality, hashing, description, reading
    /// its JSON back, the release of the nested enum) at four times the deepest value a
    /// pipeline may build (`maxValueDepth` 512, plus at most one level per stage that wraps
    /// values: 64), on a thread with the event loop's 8 MiB stack, in this debug build
    /// whose frames are several times a release build's: the walks have a wide margin at
    /// the limits. (Without the limits, a 48,000-deep value crashed the broker's stack
    /// when written, and a 58,000-deep one when freed.)
    @Test func everyWalkIsSafeFarBeyondTheDeepestValueThePipelinesAllow() throws {
        let depth = 4 * (512 + 64)
        let finished = try runOnThread(stackSize: 8 << 20) {
            var value: Value? = Self.nested(depth, around: ["k": "v"])
            let copy = Self.nested(depth, around: ["k": "v"])
            let json = value!.jsonBytes()
            precondition(json.count == 2 * depth + 9)
            precondition(value! == copy)
            precondition(value!.hashValue == copy.hashValue)
            precondition(!value!.description.isEmpty)
            precondition(value!.measure().depth == depth + 1)
            precondition((try? Value.parse(json, maxDepth: depth + 1)) == copy)
            value = nil  // freed here, on the small stack
            return value == nil
        }
        #expect(finished)
    }

    /// Runs `body` on a new thread with `stackSize` bytes of stack and returns its result.
    private func runOnThread(stackSize: Int, _ body: @escaping @Sendable () -> Bool) throws -> Bool {
        final class Box: @unchecked Sendable {
            var result = false
            let done = DispatchSemaphore(value: 0)
        }
        let box = Box()
        let thread = Thread {
            box.result = body()
            box.done.signal()
        }
        thread.stackSize = stackSize
        thread.start()
        guard box.done.wait(timeout: .now() + 60) == .success else { throw TimedOutWalk() }
        return box.result
    }

    private struct TimedOutWalk: Error {}
}
