/// The rate limits (`limits.perConnection`) of the HTTP API, kept across requests. Each
/// request is served by a session of its own, whose limiter would start full every
/// time: here a client's limiter carries over from one request to the next, per
/// identity on a server with authentication, per peer address on one without.
///
/// Bounded: a limiter unused for a second is full again (its burst is one second's
/// rate), so forgetting it changes nothing; beyond ``capacity`` clients within a second,
/// the newest are not kept (they start full next time). Confined to the hub's loop.
final class HTTPRateLimits {
    private var limiters: [String: (limiter: InboundRateLimiter, usedAt: Int64)] = [:]
    /// The most clients remembered.
    static let capacity = 10_000
    private static let refillNanoseconds: Int64 = 1_000_000_000

    /// `key`'s limiter under `limits` (a fresh one when none is kept, or the limits changed).
    func limiter(for key: String, limits: InboundRateLimits, now: Int64) -> InboundRateLimiter {
        if let kept = limiters[key], kept.limiter.limits == limits { return kept.limiter }
        return InboundRateLimiter(limits: limits, now: now)
    }

    /// Keeps `key`'s limiter as it is after a request's messages.
    func keep(_ limiter: InboundRateLimiter, for key: String, now: Int64) {
        if limiters[key] == nil, limiters.count >= HTTPRateLimits.capacity {
            limiters = limiters.filter { now - $0.value.usedAt < HTTPRateLimits.refillNanoseconds }
            guard limiters.count < HTTPRateLimits.capacity else { return }
        }
        limiters[key] = (limiter, now)
    }

    /// The clients remembered now.
    var count: Int { limiters.count }
}
