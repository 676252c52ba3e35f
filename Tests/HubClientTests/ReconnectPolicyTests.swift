import HubClient
import Testing

@Suite("ReconnectPolicy")
struct ReconnectPolicyTests {
    @Test func delaysGrowExponentiallyUpToTheCap() {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(1))
        let delays = (1...6).map { policy.delay(forAttempt: $0) }
        #expect(delays == [
            .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1),
        ])
    }

    @Test func disabledNeverReconnects() {
        #expect(!ReconnectPolicy.disabled.isEnabled)
    }
}
