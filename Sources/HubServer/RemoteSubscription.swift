import HubEngine
import HubValue
import HubWire

/// The end of one remote subscription's pipeline: a HubEngine subscriber whose
/// demand comes from the client's `request` messages and whose values become
/// `next` messages.
///
/// It never asks upstream for more than the client granted (PROTOCOL.md §5.1);
/// a running total of 2^53−1 or more becomes `.unlimited` (§5.2).
final class RemoteSubscription: Subscriber {
    typealias Input = Value
    typealias Failure = HubError

    /// The client's id for it.
    let id: UInt64
    /// Whether values go out as the batch form of `next`.
    let batch: Bool
    /// `{"op":"next","id":<id>,"value":`, the envelope every single `next` starts with.
    let nextHead: [UInt8]
    private unowned let session: Session
    // @exclusivity(unchecked) on the hot fields below: this object is confined to its
    // event loop and nothing re-enters it while one of these accesses is open, so the dynamic
    // check (a runtime call per access, the release builds once skipped it by a flag) only costs.
    @exclusivity(unchecked) private var upstream: (any Subscription)?
    @exclusivity(unchecked) private var pendingDemand = Subscribers.Demand.none
    @exclusivity(unchecked) private var granted: UInt64 = 0
    @exclusivity(unchecked) private var unlimited = false
    @exclusivity(unchecked) private(set) var isFinished = false

    /// The largest exact total; at or beyond it demand is unlimited.
    static let unlimitedThreshold: UInt64 = (1 << 53) - 1

    init(id: UInt64, batch: Bool, session: Session) {
        self.id = id
        self.batch = batch
        self.session = session
        var head: [UInt8] = []
        ServerMessage.appendNextHead(id: id, into: &head)
        nextHead = head
    }

    /// Adds the client's demand, as `request` or the initial `demand` of `subscribe`.
    func grant(_ demand: Subscribers.Demand) {
        guard !isFinished, !unlimited, demand > 0 else { return }
        let effective: Subscribers.Demand
        if let n = demand.max, granted + UInt64(n) < RemoteSubscription.unlimitedThreshold {
            granted += UInt64(n)
            effective = demand
        } else {
            unlimited = true
            effective = .unlimited
        }
        if let upstream {
            upstream.request(effective)
        } else {
            pendingDemand += effective
        }
    }

    /// Stops the subscription upstream; nothing more is delivered.
    func cancel() {
        guard !isFinished else { return }
        isFinished = true
        upstream.take()?.cancel()
    }

    func receive(subscription: any Subscription) {
        guard upstream == nil, !isFinished else {
            subscription.cancel()
            return
        }
        upstream = subscription
        if pendingDemand > 0 {
            let demand = pendingDemand
            pendingDemand = .none
            subscription.request(demand)
        }
    }

    func receive(_ input: Value) -> Subscribers.Demand {
        guard !isFinished else { return .none }
        session.deliver(input, to: self)
        return .none
    }

    func receive(completion: Subscribers.Completion<HubError>) {
        guard !isFinished else { return }
        isFinished = true
        upstream = nil
        session.finish(self, with: completion)
    }
}
