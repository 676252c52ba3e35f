import CNATS
import Foundation

/// Destroys a connection's ended subscriptions once libnats can no longer be handling
/// a message for them.
///
/// libnats 3.4 (Debian 12's) looks an incoming message's subscription up under the
/// connection's lock, lets go of that lock, and only then locks the subscription (or
/// reads it, with the library's delivery pool). A subscription that another thread
/// unsubscribes and destroys in between is freed memory to the read loop, and the
/// library aborts the whole process when locking it fails (nats.c #637, fixed in 3.6.1).
///
/// So an ended subscription is unsubscribed at once (the library takes it out of its
/// table: no message looked up later finds it, and the server stops sending), and
/// destroyed only when one of these says the read loop is past it:
/// - a round trip to the server (`PING`/`PONG`) that began after it: the read loop is one
///   thread that handles what the server sends in order, so it has finished the message
///   it was handling when the round trip began;
/// - the connection is closed (libnats has joined its read loop);
/// - ``maximumWait`` has passed (the server did not answer: a read loop handles a
///   message in microseconds). This bounds what waits, whatever the connection does.
///
/// Thread-safe; sweeps run on a dispatch queue of their own.
final class NATSSubscriptionReaper: @unchecked Sendable {
    /// How long a sweep waits for the server's answer to its round trip.
    static let roundTripTimeout: Int64 = 2_000
    /// How long after it was ended a subscription is destroyed without a round trip.
    let maximumWait: Duration
    /// How long ended subscriptions gather before a sweep.
    private let gathering: Duration

    private let connection: OpaquePointer
    private let queue = DispatchQueue(label: "hub.nats.reaper")
    private let lock = NSLock()
    /// Ended subscriptions not yet destroyed, oldest first, each with when it ended.
    private var waiting: [(subscription: OpaquePointer, ended: ContinuousClock.Instant)] = []
    private var sweepScheduled = false
    private var closed = false
    /// Held during a sweep's round trip and destruction, so that ``connectionClosed()``
    /// (before `natsConnection_Destroy`) waits until no sweep uses the connection.
    private let sweeping = NSLock()

    /// A reaper for the subscriptions of `connection` (a `natsConnection *` that stays
    /// valid until ``connectionClosed()`` has returned).
    init(connection: OpaquePointer, maximumWait: Duration, gathering: Duration = .milliseconds(20)) {
        self.connection = connection
        self.maximumWait = maximumWait
        self.gathering = gathering
    }

    /// How many ended subscriptions wait to be destroyed.
    var waitingCount: Int { lock.withLock { waiting.count } }

    /// Ends `subscription` now (unsubscribing it, when it is not yet) and destroys it
    /// once the read loop is past it. The caller lets go of the pointer.
    func retire(_ subscription: OpaquePointer) {
        _ = natsSubscription_Unsubscribe(subscription)
        let now = ContinuousClock.now
        let destroyNow: Bool = lock.withLock {
            if closed { return true }
            waiting.append((subscription, now))
            return false
        }
        if destroyNow { return natsSubscription_Destroy(subscription) }
        scheduleSweep(after: gathering)
    }

    /// The connection is closed (`natsConnection_Close` has returned: no read loop runs):
    /// destroys what waits, and destroys at once what is retired from now on.
    func connectionClosed() {
        let batch: [OpaquePointer] = sweeping.withLock {
            lock.withLock {
                closed = true
                defer { waiting.removeAll() }
                return waiting.map(\.subscription)
            }
        }
        batch.forEach { natsSubscription_Destroy($0) }
    }

    private func scheduleSweep(after delay: Duration) {
        let schedule: Bool = lock.withLock {
            guard !sweepScheduled, !closed, !waiting.isEmpty else { return false }
            sweepScheduled = true
            return true
        }
        guard schedule else { return }
        let (seconds, attoseconds) = delay.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in sweep() }
    }

    /// Destroys the subscriptions that ended before a round trip the server answered,
    /// and those that waited ``maximumWait``; sweeps again later while some wait.
    private func sweep() {
        let answered = sweeping.withLock { () -> Bool in
            let began = ContinuousClock.now
            guard !lock.withLock({ closed }) else { return false }
            let answered = natsConnection_FlushTimeout(connection, Self.roundTripTimeout) == NATS_OK
            let now = ContinuousClock.now
            var batch: [OpaquePointer] = []
            lock.withLock {
                waiting.removeAll { entry in
                    guard answered && entry.ended <= began || entry.ended + maximumWait <= now else { return false }
                    batch.append(entry.subscription)
                    return true
                }
            }
            batch.forEach { natsSubscription_Destroy($0) }
            return answered
        }
        lock.withLock { sweepScheduled = false }
        scheduleSweep(after: answered ? gathering : .seconds(1))
    }
}
