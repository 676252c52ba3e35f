import HubValue

/// One value of a subject's history and its offset.
///
/// Offsets grow by one per value published into the subject, within its
/// ``SubjectLog/epoch``; the first value of an epoch has offset 1, and offset 0
/// stands for "before the first value" (a current-value subject's initial value,
/// which was never published, carries it).
public struct HistoryEntry: Hashable, Sendable {
    /// The value's position in the subject's history.
    public var offset: UInt64
    /// The value.
    public var value: Value

    /// The value `value` at `offset`.
    public init(offset: UInt64, value: Value) {
        self.offset = offset
        self.value = value
    }
}
