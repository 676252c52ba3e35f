import HubEngine
import HubRegistry

/// Slows one connection down while a subject it sends to is congested (PROTOCOL.md
/// §5.7, `overflow: block`): the broker stops reading the client's messages until
/// every full buffer of those subjects has drained to half, so that a publisher that
/// outruns its subscribers waits for them instead of filling the broker's memory.
///
/// It waits at most `maximumWait`: then the subscriptions still full end with
/// `overflow` (``SubjectCongestion/failCongesting()``) and the connection reads on, so
/// that one stuck subscriber cannot stop a subject's publishers for longer (nor a client
/// that publishes into a subject it is itself too slow to read).
///
/// It also stops reading while too much of what the connection sent waits for the
/// durable store (``holdForStore()``): a slow disk slows its publishers down instead of
/// refusing their values once the store's own bound is reached. Loop-confined.
final class PublisherBrake {
    private let connection: any SessionConnection
    private let scheduler: any Scheduler
    private let maximumWait: Duration
    /// The congestions waited for, until each is relieved.
    private var waitingFor: [ObjectIdentifier: SubjectCongestion] = [:]
    private var timer: (any Cancellable)?
    /// Bumped on each release, so that a relief heard after it is ignored.
    private var round: UInt64 = 0

    init(connection: any SessionConnection, scheduler: any Scheduler, maximumWait: Duration) {
        self.connection = connection
        self.scheduler = scheduler
        self.maximumWait = maximumWait
    }

    /// Whether reading is paused now for a congested subject.
    private(set) var isHolding = false
    /// Whether reading is paused now for the durable store.
    private(set) var isHoldingForStore = false

    /// Pauses reading until ``releaseStore()``: the connection's values waiting for the
    /// disk reached their bound. No time limit: the values are on their way to the disk.
    func holdForStore() {
        guard !isHoldingForStore else { return }
        isHoldingForStore = true
        if !isHolding { connection.pauseReading() }
    }

    /// Reads on, unless a congested subject still holds the connection.
    func releaseStore() {
        guard isHoldingForStore else { return }
        isHoldingForStore = false
        if !isHolding { connection.resumeReading() }
    }

    /// Pauses reading while `congestion` is congested (nothing when it is not).
    func hold(until congestion: SubjectCongestion) {
        guard congestion.isCongested else { return }
        let key = ObjectIdentifier(congestion)
        guard waitingFor[key] == nil else { return }
        if !isHolding {
            isHolding = true
            if !isHoldingForStore { connection.pauseReading() }
            timer = scheduler.schedule(after: scheduler.now.advanced(by: maximumWait)) { [weak self] in
                self?.waitedTooLong()
            }
        }
        waitingFor[key] = congestion
        let round = self.round
        congestion.whenRelieved { [weak self] in
            guard let self, self.round == round, waitingFor.removeValue(forKey: key) != nil, waitingFor.isEmpty else {
                return
            }
            release()
        }
    }

    /// The full buffers kept the connection waiting for `maximumWait`: they end, and the
    /// connection reads on.
    private func waitedTooLong() {
        timer = nil
        let congestions = Array(waitingFor.values)
        release()
        for congestion in congestions { congestion.failCongesting() }
    }

    /// Reads on (also when the session ends: nothing is waited for any more).
    func release() {
        round &+= 1
        timer?.cancel()
        timer = nil
        waitingFor.removeAll()
        guard isHolding else { return }
        isHolding = false
        if !isHoldingForStore { connection.resumeReading() }
    }
}
