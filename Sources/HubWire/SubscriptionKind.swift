/// What a `subscribe` is attached to, as reported in `subscribed` (PROTOCOL.md §4).
/// The raw values are the wire spellings.
public enum SubscriptionKind: String, Hashable, Sendable, CaseIterable {
    /// A subject (`to` a subject name).
    case subject = "subject"
    /// A named pipeline, or pipeline text.
    case pipeline = "pipeline"
    /// A trigger: its values are the activations' keys.
    case trigger = "trigger"
}
