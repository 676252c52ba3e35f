/// What a hot subscription's full buffer does with one more value (PROTOCOL.md §5.7).
public enum OverflowPolicy: String, Hashable, Sendable, CaseIterable {
    /// Ends the subscription with error code `overflow`.
    case error
    /// Discards the oldest buffered value to make room.
    case dropOldest
    /// Discards the arriving value.
    case dropNewest
    /// Keeps only the arriving value, discarding everything buffered.
    case latest
}
