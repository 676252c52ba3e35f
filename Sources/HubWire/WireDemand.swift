/// A demand as protocol v1 carries it: the `demand` of `subscribe` and the `n` of
/// `request`, a count or `"unlimited"` (PROTOCOL.md §5).
///
/// The wire layer knows nothing of the engine: the server turns it into the engine's
/// `Subscribers.Demand` where it grants it, and the client makes it from the demand its
/// subscribers request.
public struct WireDemand: Hashable, Sendable, CustomStringConvertible {
    /// The count, or `nil` for `"unlimited"`.
    public let count: Int?

    private init(count: Int?) { self.count = count }

    /// A demand for `count` values (`count` ≥ 0).
    public static func max(_ count: Int) -> WireDemand {
        precondition(count >= 0, "demand cannot be negative")
        return WireDemand(count: count)
    }

    /// `"unlimited"`.
    public static let unlimited = WireDemand(count: nil)

    /// A demand for nothing (a `subscribe` without `demand`).
    public static let none = WireDemand(count: 0)

    /// Whether this is `"unlimited"`.
    public var isUnlimited: Bool { count == nil }

    /// `"unlimited"` or `"max(n)"`.
    public var description: String { count.map { "max(\($0))" } ?? "unlimited" }
}
