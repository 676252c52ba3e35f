@testable import HubTransport
import Testing

/// The keepalive a server's sweep advances once a second, second by second (virtual time).
@Suite("Keepalive")
struct KeepaliveTests {
    /// The actions of `seconds` sweeps; `heardAt` holds the seconds before whose sweep the peer sent something.
    private func actions(_ keepalive: inout Keepalive, seconds: Int, heardAt: Set<Int> = []) -> [Keepalive.Action] {
        (1...seconds).map { second in
            if heardAt.contains(second) { keepalive.peerWasHeard() }
            return keepalive.secondPassed()
        }
    }

    @Test func aSilentPeerIsPingedEveryIntervalThenHungUpOn() {
        var keepalive = Keepalive(pingInterval: 3, idleTimeout: 10)
        // The first sweep after the opening counts it as heard; then 3 silent seconds.
        let seen = actions(&keepalive, seconds: 11)
        #expect(seen == [.none, .none, .none, .ping, .none, .none, .ping, .none, .none, .ping, .hangUp])
    }

    @Test func anythingHeardStartsTheSilenceAgain() {
        var keepalive = Keepalive(pingInterval: 2, idleTimeout: 4)
        // Heard before sweeps 3, 6 and 9 (a message, or the pong of the ping at 2 and 5…).
        let seen = actions(&keepalive, seconds: 12, heardAt: [3, 6, 9])
        #expect(seen == [.none, .none, .none, .none, .ping, .none, .none, .ping, .none, .none, .ping, .none])
        #expect(!seen.contains(.hangUp))
        #expect(keepalive.silentSeconds == 3)
    }

    @Test func anIdleTimeoutNoLongerThanTheIntervalHangsUpWithoutAPing() {
        var keepalive = Keepalive(pingInterval: 5, idleTimeout: 2)
        #expect(keepalive.idleTimeout == 5)
        #expect(actions(&keepalive, seconds: 6) == [.none, .none, .none, .none, .none, .hangUp])
    }

    @Test func aZeroIntervalIsOneSecond() {
        var keepalive = Keepalive(pingInterval: 0, idleTimeout: 3)
        #expect(actions(&keepalive, seconds: 4) == [.none, .ping, .ping, .hangUp])
    }
}
