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
    /// Keep the value and slow the subject's publishers down: the broker stops reading
    /// from the connections that send to the subject until its subscribers have drained
    /// (a subject's setting in the configuration; a subscriber cannot ask for it).
    case block = "block"

    /// The policies a subscriber may ask for in `subscribe` (every one but ``block``,
    /// which would let one subscriber slow down every publisher of a subject).
    public static let subscriberChoices: [OverflowPolicy] = [.error, .dropOldest, .dropNewest, .latest]
}
