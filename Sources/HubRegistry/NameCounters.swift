/// The counters of one name (subject, trigger or named pipeline) for the metrics:
/// values published into it (`send`, or a trigger's activations), values delivered to
/// the subscriptions `to` it, values dropped by their buffers, and subscriptions ended
/// by an overflow.
///
/// Plain integers, confined to the hub's event loop like every hub object: the hot
/// path adds one to a field of an object it already holds (the subject, or the remote
/// subscription's), never looks a name up. ``HubMetrics`` hands them out, bounded.
public final class NameCounters {
    /// The name, or ``HubMetrics/otherName`` / ``HubMetrics/adHocName`` for the shared ones.
    public let name: String
    /// What the name was when its counters were made (`subject`, `trigger`, `pipeline`),
    /// kept after a `delete` so that the metrics keep labelling it the same; `nil` for
    /// the shared ones.
    public internal(set) var kind: String?
    /// Values published into the name.
    public var published = 0
    /// Values delivered to subscriptions `to` the name.
    public var delivered = 0
    /// Values discarded by a `dropOldest`, `dropNewest` or `latest` buffer.
    public var dropped = 0
    /// Subscriptions ended by an `overflow` error.
    public var overflows = 0

    /// Counters at zero for `name`.
    public init(name: String) {
        self.name = name
    }
}
