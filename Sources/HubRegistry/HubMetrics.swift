/// Counters the hub keeps so that nothing is dropped silently (PROTOCOL.md §5.7).
///
/// Confined to the hub's event loop like every hub object.
public final class HubMetrics {
    /// Values published into subjects (`send`).
    public internal(set) var published = 0
    /// Trigger activations.
    public internal(set) var activations = 0
    /// Values discarded by a `dropOldest`, `dropNewest` or `latest` buffer.
    public internal(set) var dropped = 0
    /// Subscriptions ended by an `overflow` error.
    public internal(set) var overflows = 0

    /// Counters at zero.
    public init() {}

    /// Counts `count` dropped values.
    public func recordDropped(_ count: Int) { dropped += count }

    /// Counts one subscription ended by overflow.
    public func recordOverflow() { overflows += 1 }
}
