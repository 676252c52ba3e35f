/// The live subscriptions of one session, by the client's id.
///
/// The session adds to it (`subscribe`) and takes from it (`cancel`, an invalid
/// `request`); a subscriber whose stream ends removes itself; the session's way
/// out empties it when the connection ends. Confined to the hub's event loop.
final class SessionSubscriptions {
    // Confined to the loop, and never re-entered while an access is open.
    @exclusivity(unchecked) private var byID: [UInt64: RemoteSubscriber] = [:]

    /// The number of live subscriptions.
    var count: Int { byID.count }

    /// The subscription with the client's `id`, if live.
    subscript(id: UInt64) -> RemoteSubscriber? { byID[id] }

    /// Adds a new subscription (its id is not live).
    func insert(_ subscriber: RemoteSubscriber) {
        byID[subscriber.id] = subscriber
    }

    /// Removes and returns the subscription with `id`.
    @discardableResult
    func remove(id: UInt64) -> RemoteSubscriber? {
        byID.removeValue(forKey: id)
    }

    /// Removes `subscriber` if it is the live one under its id; returns whether it was.
    func remove(_ subscriber: RemoteSubscriber) -> Bool {
        guard byID[subscriber.id] === subscriber else { return false }
        byID.removeValue(forKey: subscriber.id)
        return true
    }

    /// The live ids, in increasing order.
    var sortedIDs: [UInt64] { byID.keys.sorted() }

    /// Empties the table and cancels every subscription upstream.
    func cancelAll() {
        let live = byID.values
        byID.removeAll()
        for subscriber in live { subscriber.cancel() }
    }
}
