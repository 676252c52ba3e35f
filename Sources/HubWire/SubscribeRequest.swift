
/// A well-formed `subscribe`: what to subscribe to and how.
///
/// Only the wire's own rules are checked here; server limits (the maximum
/// `buffer`, whether ad-hoc pipelines are allowed, whether the name exists)
/// are the session's business.
public struct SubscribeRequest: Hashable, Sendable {
    /// What a subscription is attached to.
    public enum Target: Hashable, Sendable {
        /// `to`: a subject, named pipeline or trigger name (already a valid ``HubName``).
        case name(String)
        /// `pipeline`: pipeline source text to compile for this subscription.
        case pipeline(String)
    }

    /// `to` or `pipeline`.
    public var target: Target
    /// The initial demand (`demand`, default `.none`).
    public var demand: WireDemand
    /// `batch`, when present.
    public var batch: Bool?
    /// `buffer` (≥ 1), when present.
    public var buffer: Int?
    /// `overflow`, when present.
    public var overflow: OverflowPolicy?

    /// A request; everything but the target is optional.
    public init(
        target: Target,
        demand: WireDemand = .none,
        batch: Bool? = nil,
        buffer: Int? = nil,
        overflow: OverflowPolicy? = nil
    ) {
        self.target = target
        self.demand = demand
        self.batch = batch
        self.buffer = buffer
        self.overflow = overflow
    }
}
