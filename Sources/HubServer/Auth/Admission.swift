import DequeModule
import HubEngine
import HubPipeline
import HubRegistry
import HubWire

/// Who may hold a connection: the service's count of authenticated connections (bounded
/// by `maxConnections`), each identity's connections (bounded by its own limit) and its
/// shared budget, and the connections still waiting to authenticate.
///
/// Connections that have not authenticated do not count toward `maxConnections`: they
/// wait in a pool of their own, bounded by `maxUnauthenticated`, where a newcomer
/// displaces the one that has waited longest (a real client authenticates within
/// milliseconds, so tokenless sockets can no longer lock real clients out; each also
/// ends at the authentication timeout). Confined to the hub's event loop.
final class Admission {
    /// The bounds.
    struct Limits {
        /// Authenticated connections at once.
        var maxConnections: Int
        /// Connections waiting to authenticate at once.
        var maxUnauthenticated: Int
        /// Connections of one identity at once, unless the identity sets its own.
        var maxConnectionsPerIdentity: Int?
        /// The budget every identity's connections share.
        var identityBudget: ResourceBudget.Limits
    }

    /// What admitting a connection gives.
    enum Verdict {
        /// Admitted: its pipelines spend from this identity budget too (`nil`: none).
        case admitted(identityBudget: ResourceBudget?)
        /// Refused, with the error to send and a close 4429.
        case refused(HubError)
    }

    /// One identity's connections and budget.
    private final class IdentityEntry {
        var connections = 0
        let budget: ResourceBudget?
        init(budget: ResourceBudget?) { self.budget = budget }
    }

    var limits: Limits
    private let clock: () -> SchedulerTime
    /// Authenticated connections now.
    private(set) var authenticatedCount = 0
    private var identities: [String: IdentityEntry] = [:]
    /// Sessions waiting to authenticate, oldest first (weak: a closed one just leaves).
    private var waiting = Deque<WeakSession>()
    private var waitingCount = 0

    init(limits: Limits, clock: @escaping () -> SchedulerTime) {
        self.limits = limits
        self.clock = clock
    }

    /// The connections of identity `name` now.
    func connections(of name: String) -> Int { identities[name]?.connections ?? 0 }

    /// Connections waiting to authenticate now.
    var unauthenticatedCount: Int { waitingCount }

    /// Admits an authenticated connection of `identity`, or refuses it (the service or the
    /// identity is at its limit). `budgeted`: whether the identity has a budget of its own.
    func admit(_ identity: Identity, budgeted: Bool) -> Verdict {
        guard authenticatedCount < limits.maxConnections else {
            return .refused(HubError(
                .limitExceeded, "the server has \(limits.maxConnections) connections (its limit)",
                data: ["limit": "maxConnections", "value": .int(Int64(limits.maxConnections))]))
        }
        let entry = identities[identity.name] ?? IdentityEntry(budget: budgeted ? ResourceBudget(
            owner: "identity '\(identity.name)'", limits: limits.identityBudget, clock: clock) : nil)
        if let maximum = identity.maxConnections ?? limits.maxConnectionsPerIdentity, entry.connections >= maximum {
            return .refused(HubError(
                .limitExceeded, "identity '\(identity.name)' has \(maximum) connections (its limit)",
                data: ["limit": "connectionsPerIdentity", "value": .int(Int64(maximum))]))
        }
        identities[identity.name] = entry
        entry.connections += 1
        authenticatedCount += 1
        return .admitted(identityBudget: entry.budget)
    }

    /// An admitted connection of identity `name` has ended.
    func leave(identity name: String) {
        authenticatedCount -= 1
        guard let entry = identities[name] else { return }
        entry.connections -= 1
        if entry.connections == 0 { identities[name] = nil }
    }

    /// `session` waits to authenticate; returns the session it displaces when the pool is
    /// full (the one that has waited longest), which the caller drops (its
    /// ``stopWaiting(_:)`` then follows).
    func wait(_ session: Session) -> Session? {
        waiting.append(WeakSession(session))
        waitingCount += 1
        guard waitingCount > limits.maxUnauthenticated else { return nil }
        while let oldest = waiting.popFirst() {
            guard let displaced = oldest.session, displaced !== session, displaced.isWaitingForAuthentication else { continue }
            return displaced
        }
        return nil
    }

    /// `session` stopped waiting (authenticated, refused, displaced or closed).
    func stopWaiting(_ session: Session) {
        waitingCount -= 1
        // The entry leaves lazily: drop the dead and finished ones at the front now.
        while let first = waiting.first, first.session == nil || first.session?.isWaitingForAuthentication == false
            || first.session === session {
            waiting.removeFirst()
        }
    }
}

/// A session, weakly.
private struct WeakSession {
    weak var session: Session?
    init(_ session: Session) { self.session = session }
}
