/// Where a subscription to a subject with history starts (`subscribe`'s `since`,
/// PROTOCOL.md §10): after an offset the client already has, or the last few values.
public enum HistorySince: Hashable, Sendable {
    /// `{"offset": N, "epoch": "E"}`: the values after offset `N` of epoch `E` still in
    /// history, then the live ones. Without an epoch, the subject's current one is meant.
    case offset(UInt64, epoch: String?)
    /// `{"last": K}`: the last `K` values still in history, then the live ones.
    case last(UInt64)

    /// The largest offset or count the wire carries exactly (2^53−1).
    public static let maxNumber: UInt64 = (1 << 53) - 1
}
