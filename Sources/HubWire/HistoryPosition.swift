/// Where a subject with history stands when a subscription to it starts: the
/// `epoch` and `offset` that `subscribed` carries (PROTOCOL.md §10).
public struct HistoryPosition: Hashable, Sendable {
    /// The subject's epoch: offsets are only comparable within one.
    public var epoch: String
    /// The latest offset of the subject when the subscription started (0: none yet).
    public var offset: UInt64

    /// A position.
    public init(epoch: String, offset: UInt64) {
        self.epoch = epoch
        self.offset = offset
    }
}
