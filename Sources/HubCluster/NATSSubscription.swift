import CNATS
import Foundation

/// A subscription of a ``NATSConnection``: its handler gets messages until
/// ``unsubscribe()`` (or until it is released). Thread-safe.
public final class NATSSubscription: @unchecked Sendable {
    /// The subject it listens to.
    public let subject: String
    private let subscription: OpaquePointer
    private let reaper: NATSSubscriptionReaper
    private let lock = NSLock()
    private var isActive = true

    init(_ subscription: OpaquePointer, subject: String, reaper: NATSSubscriptionReaper) {
        self.subscription = subscription
        self.subject = subject
        self.reaper = reaper
    }

    deinit {
        // Unsubscribed now, destroyed once the library cannot be handling a message of it.
        reaper.retire(subscription)
    }

    /// Ends the subscription: the server stops sending its messages (the handler may
    /// still get one that was already on its way). Idempotent.
    public func unsubscribe() {
        let first = lock.withLock {
            defer { isActive = false }
            return isActive
        }
        if first { _ = natsSubscription_Unsubscribe(subscription) }
    }

    /// How many messages the library dropped because the handler fell behind (a slow consumer).
    public var dropped: Int64 {
        var count: Int64 = 0
        _ = natsSubscription_GetDropped(subscription, &count)
        return count
    }
}
