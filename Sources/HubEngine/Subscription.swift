/// The link between a publisher and one subscriber, as Combine's `Subscription`.
///
/// The subscriber asks for values with ``request(_:)`` and stops them with
/// `cancel()`. Both may be called from inside the subscriber's own
/// `receive(_:)` (reentrancy), and `cancel()` is idempotent.
public protocol Subscription: Cancellable, CustomCombineIdentifierConvertible {
    /// Adds `demand` to the number of values the subscriber is willing to receive.
    func request(_ demand: Subscribers.Demand)
}

extension Subscriptions {
    /// A subscription that does nothing: for publishers that complete at once.
    public static var empty: any Subscription { EmptySubscription.shared }
}

/// The singleton behind ``Subscriptions/empty``.
internal final class EmptySubscription: Subscription, @unchecked Sendable {
    static let shared = EmptySubscription()
    let combineIdentifier = CombineIdentifier()
    func request(_ demand: Subscribers.Demand) {}
    func cancel() {}
}
