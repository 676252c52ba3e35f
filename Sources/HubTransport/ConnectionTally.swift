import Synchronization

/// The open connections of several ``WebSocketServer``s that share one bound (the
/// servers of a broker's loops, on one port): each counts its connections here, against
/// its ``WebSocketServer/Configuration/maximumConnections``, so that the bound holds for
/// them all together however the kernel spreads the connections. Any thread.
public final class ConnectionTally: Sendable {
    private let open = Atomic<Int>(0)

    /// An empty tally.
    public init() {}

    /// The connections counted now.
    public var count: Int { open.load(ordering: .relaxed) }

    /// Counts one more connection unless `limit` are counted already; returns whether it did.
    func reserve(limit: Int) -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = open.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Counts one connection less.
    func release() {
        open.subtract(1, ordering: .relaxed)
    }
}
