import OrderedCollections

/// The accepted sockets of a server that have not sent a whole request yet (an upgrade,
/// or an HTTP request and its body; or, on a keep-alive connection, the next one), oldest
/// first, each with the deadline by which it must have: bounded, so that ``add(_:deadline:limit:)``
/// of one too many gives back the oldest for the server to close (sockets that connect
/// and send nothing would otherwise hold a descriptor each until none was left for real
/// clients), and timed (``removeExpired(now:)``). Loop-confined, like its server.
struct PendingHandshakes {
    private var sockets = OrderedDictionary<OpaquePointer, Int64>()

    /// How many are waiting.
    var count: Int { sockets.count }

    /// Adds `wsi`, which must send its request by `deadline` (monotonic nanoseconds); when
    /// more than `limit` then wait, removes and returns the oldest. A socket already
    /// waiting moves to the end with its new deadline.
    mutating func add(_ wsi: OpaquePointer, deadline: Int64, limit: Int) -> OpaquePointer? {
        sockets.removeValue(forKey: wsi)
        sockets[wsi] = deadline
        guard sockets.count > max(1, limit) else { return nil }
        return sockets.removeFirst().key
    }

    /// Gives `wsi`, if it is waiting, the new `deadline` (it moves to the end).
    mutating func restart(_ wsi: OpaquePointer, deadline: Int64) {
        guard sockets.removeValue(forKey: wsi) != nil else { return }
        sockets[wsi] = deadline
    }

    /// `wsi` sent its request, or was freed.
    mutating func remove(_ wsi: OpaquePointer) {
        sockets.removeValue(forKey: wsi)
    }

    /// Removes and returns the sockets whose deadline is not after `now` (deadlines grow
    /// with arrival, so they are at the front).
    mutating func removeExpired(now: Int64) -> [OpaquePointer] {
        var expired: [OpaquePointer] = []
        while let first = sockets.elements.first, first.value <= now {
            expired.append(first.key)
            sockets.removeFirst()
        }
        return expired
    }
}
