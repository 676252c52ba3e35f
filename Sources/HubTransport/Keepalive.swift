/// A server connection's keepalive, advanced by its server's once-a-second sweep: a ping
/// after ``pingInterval`` seconds in which nothing came from the peer, another every
/// ``pingInterval`` seconds while the silence lasts, and a hang-up after ``idleTimeout``.
///
/// Anything the peer sends (a message, a fragment, a pong) counts as being heard: a flag
/// set on the receive path, with no clock read and no timer touched. lws's own keepalive
/// (`retry_and_idle_policy`) rescheduled a per-connection timer in a sorted list at every
/// ping and pong, a walk over every connection each time: at 18,000 idle connections it
/// kept the loop 78 % busy. The sweep costs a flag test per connection per second.
///
/// A silence is counted in whole seconds between sweeps, so the ping goes between
/// ``pingInterval`` and ``pingInterval`` + 1 s after the peer was last heard, and the
/// hang-up between ``idleTimeout`` and ``idleTimeout`` + 1 s.
struct Keepalive: Equatable {
    /// What a sweep asks of the connection.
    enum Action: Equatable {
        case none
        /// Send a ping.
        case ping
        /// Close the connection: the peer has been silent for ``idleTimeout`` seconds.
        case hangUp
    }

    /// What a ping carries. Not empty: lws hands a pong to the connection only when it
    /// has a payload, and a peer answers a ping with a pong carrying the same bytes.
    static let pingPayload: [UInt8] = Array("hub".utf8)

    /// Seconds of silence before a ping (at least 1).
    let pingInterval: UInt32
    /// Seconds of silence before the hang-up (at least ``pingInterval``; when equal, no ping is sent).
    let idleTimeout: UInt32
    /// Whether the peer was heard since the last sweep.
    private(set) var heard = true
    /// Sweeps in a row that found the peer silent.
    private(set) var silentSeconds: UInt32 = 0

    /// Pings after `pingInterval` seconds of silence, hangs up after `idleTimeout` (raised
    /// to `pingInterval` when below it).
    init(pingInterval: UInt16, idleTimeout: UInt16) {
        self.pingInterval = UInt32(max(1, pingInterval))
        self.idleTimeout = max(UInt32(idleTimeout), self.pingInterval)
    }

    /// The peer sent something.
    @inline(__always)
    mutating func peerWasHeard() {
        heard = true
    }

    /// A second passed: what to do now.
    mutating func secondPassed() -> Action {
        if heard {
            heard = false
            silentSeconds = 0
            return .none
        }
        silentSeconds += 1
        if silentSeconds >= idleTimeout { return .hangUp }
        return silentSeconds % pingInterval == 0 ? .ping : .none
    }
}
