import OrderedCollections

/// The accepted sockets of a server that have not sent their upgrade or HTTP request
/// yet, oldest first, bounded: ``add(_:limit:)`` of one too many gives back the oldest
/// for the server to close (issue 12, reproduction 8: sockets that connect and send
/// nothing used to hold a descriptor each until their timeout, until none was left
/// for real clients). Loop-confined, like its server.
struct PendingHandshakes {
    private var sockets = OrderedSet<OpaquePointer>()

    /// How many are waiting.
    var count: Int { sockets.count }

    /// Adds `wsi`; when more than `limit` then wait, removes and returns the oldest.
    mutating func add(_ wsi: OpaquePointer, limit: Int) -> OpaquePointer? {
        sockets.append(wsi)
        guard sockets.count > max(1, limit) else { return nil }
        return sockets.removeFirst()
    }

    /// `wsi` sent its request, or was freed.
    mutating func remove(_ wsi: OpaquePointer) {
        sockets.remove(wsi)
    }
}
