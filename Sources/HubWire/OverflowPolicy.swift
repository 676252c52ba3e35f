/// What a subscription does with a value that arrives while its buffer is full
/// (PROTOCOL.md §5.7). The raw values are the wire spellings.
public enum OverflowPolicy: String, Hashable, Sendable, CaseIterable {
    /// End the subscription with code `overflow` (the default).
    case error = "error"
    /// Discard the oldest buffered value.
    case dropOldest = "dropOldest"
    /// Discard the arriving value.
    case dropNewest = "dropNewest"
    /// Keep only the arriving value.
    case latest = "latest"
}
