/// The rates at which one connection may send (`limits.perConnection.messagesPerSecond`
/// and `bytesPerSecond`); `nil`: not limited.
public struct InboundRateLimits: Hashable, Sendable {
    /// Messages a second (text or binary), with bursts of one second's worth.
    public var messagesPerSecond: Int?
    /// Payload bytes a second, with bursts of one second's worth (a message larger than
    /// that is let through when the bucket is not empty, and paid for by later seconds).
    public var bytesPerSecond: Int?

    /// Rate limits.
    public init(messagesPerSecond: Int? = nil, bytesPerSecond: Int? = nil) {
        self.messagesPerSecond = messagesPerSecond
        self.bytesPerSecond = bytesPerSecond
    }

    /// Whether nothing is limited.
    public var isUnlimited: Bool { messagesPerSecond == nil && bytesPerSecond == nil }
}

/// Two token buckets over one connection's inbound messages: each holds at most one
/// second of its rate and refills continuously on the loop's clock. A message is let in
/// while the buckets are not empty; the first one that finds a bucket empty names the
/// limit (the session then answers `limit_exceeded` and closes with 4429).
public struct InboundRateLimiter {
    /// The rates.
    public let limits: InboundRateLimits
    private var messageTokens: Double
    private var byteTokens: Double
    private var refilledAt: Int64

    /// Full buckets at `now` (nanoseconds of the loop's clock).
    public init(limits: InboundRateLimits, now: Int64) {
        self.limits = limits
        messageTokens = Double(limits.messagesPerSecond ?? 0)
        byteTokens = Double(limits.bytesPerSecond ?? 0)
        refilledAt = now
    }

    /// Lets in one message of `bytes` payload bytes at `now`, or returns the name of the
    /// limit it is over (`messagesPerSecond`, `bytesPerSecond`) and its value.
    public mutating func admit(bytes: Int, now: Int64) -> (limit: String, value: Int)? {
        let seconds = Double(max(0, now - refilledAt)) / 1e9
        refilledAt = max(refilledAt, now)
        if let rate = limits.messagesPerSecond {
            messageTokens = min(Double(rate), messageTokens + seconds * Double(rate))
            guard messageTokens >= 1 else { return ("messagesPerSecond", rate) }
        }
        if let rate = limits.bytesPerSecond {
            byteTokens = min(Double(rate), byteTokens + seconds * Double(rate))
            guard byteTokens > 0 else { return ("bytesPerSecond", rate) }
        }
        messageTokens -= 1
        byteTokens -= Double(bytes)
        return nil
    }
}
