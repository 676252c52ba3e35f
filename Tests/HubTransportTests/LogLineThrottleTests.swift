@testable import HubTransport
import Testing

/// A line lws repeats on every loop pass (`accept: errno 24` while out of descriptors:
/// 60,000 lines in 6 s once) goes out at most ten times a second, then once as a
/// count.
@Suite("lws log throttle")
struct LogLineThrottleTests {
    @Test func aRepeatedLineIsCountedPastItsBurst() {
        var throttle = LogLineThrottle(burst: 3)
        let second: Int64 = 1_000_000_000
        let first = (0..<1000).map { throttle.admit("accept: errno 24", now: Int64($0) * 1000) }
        #expect(first.filter(\.emit).count == 3)
        #expect(first.allSatisfy { $0.summary == nil })
        let next = throttle.admit("accept: errno 24", now: second)
        #expect(next.emit && next.summary == "(997 more of: accept: errno 24)")
        // Another line ends the run at once, with its count.
        _ = throttle.admit("accept: errno 24", now: second + 1)
        _ = throttle.admit("accept: errno 24", now: second + 2)
        _ = throttle.admit("accept: errno 24", now: second + 3)
        let other = throttle.admit("something else", now: second + 4)
        #expect(other.emit && other.summary == "(1 more of: accept: errno 24)")
    }
}
