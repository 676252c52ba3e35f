/// How a ``HubClient`` reconnects after losing an established connection.
///
/// Delays grow exponentially: `initialDelay`, then ×`multiplier` per failed
/// attempt, capped at `maximumDelay`. The first connection is never retried: a
/// refused first connect fails the call that asked for it. A subscription to a
/// subject with history resumes on the new connection after the last value it
/// delivered; others fail with `disconnected` when the connection is lost.
public struct ReconnectPolicy: Hashable, Sendable {
    /// Whether to reconnect at all.
    public var isEnabled: Bool
    /// The delay before the first attempt after a loss.
    public var initialDelay: Duration
    /// The factor applied to the delay after every failed attempt (≥ 1).
    public var multiplier: Double
    /// The cap of the delay.
    public var maximumDelay: Duration
    /// How many attempts in a row before giving up (`nil`: never give up). When the
    /// client gives up, the calls waiting for the connection fail with `disconnected`
    /// and the next call starts connecting afresh.
    public var maximumAttempts: Int?

    /// A policy; defaults: 100 ms, doubling, capped at 5 s, unlimited attempts.
    public init(
        isEnabled: Bool = true, initialDelay: Duration = .milliseconds(100), multiplier: Double = 2,
        maximumDelay: Duration = .seconds(5), maximumAttempts: Int? = nil
    ) {
        self.isEnabled = isEnabled
        self.initialDelay = initialDelay
        self.multiplier = max(multiplier, 1)
        self.maximumDelay = maximumDelay
        self.maximumAttempts = maximumAttempts
    }

    /// Never reconnect.
    public static let disabled = ReconnectPolicy(isEnabled: false)

    /// The delay before attempt `attempt` (1-based).
    public func delay(forAttempt attempt: Int) -> Duration {
        let initial = Double(initialDelay.components.seconds) + Double(initialDelay.components.attoseconds) / 1e18
        let cap = Double(maximumDelay.components.seconds) + Double(maximumDelay.components.attoseconds) / 1e18
        var seconds = initial
        var step = 1
        while step < attempt, seconds < cap {
            seconds *= multiplier
            step += 1
        }
        return .nanoseconds(Int64(min(seconds, cap) * 1e9))
    }
}
