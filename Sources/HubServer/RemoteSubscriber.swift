import HubEngine
import HubRegistry
import HubValue
import HubWire

/// The end of one remote subscription's pipeline on the server: the engine subscriber
/// whose demand is what the client granted (`subscribe`'s `demand`, then `request`)
/// and whose values go out as that subscription's `next`.
///
/// It never asks upstream for more than the client granted (PROTOCOL.md §5.1); a
/// running total of 2^53−1 or more becomes `.unlimited` (§5.2). Values, `complete`
/// and `error` go straight to the session's ``SessionOutbound``; a subscription that
/// ends removes itself from the session's table. Confined to the hub's event loop.
///
/// A *paced* subscriber (a subject with `overflow: block`, §5.7) asks upstream for at
/// most ``pacedWindow`` values at a time, and for the next ones only once those went
/// out and its connection's queue is under the replay watermark: a subscriber whose
/// socket is slow keeps the values in its subscription's buffer, where they slow the
/// subject's publishers down, instead of in its connection's queue.
final class RemoteSubscriber: Subscriber {
    typealias Input = Value
    typealias Failure = HubError

    /// The client's id for it.
    let id: UInt64
    /// Whether values go out as the batch form of `next`.
    let batch: Bool
    /// Its `next` envelope.
    let envelope: NextEnvelope
    // Strong, so that a delivery costs no reference counting (an unowned reference is
    // retained on every use): the cycle through the session's table is broken when the
    // subscription leaves the table (cancel, completion, or the session's end).
    private let outbound: SessionOutbound
    private let subscriptions: SessionSubscriptions
    /// Where its deliveries are counted (the name's, or the ad-hoc pipelines').
    private let counters: NameCounters
    /// The pipeline it subscribes to (its name, or "ad-hoc"), for failures; `nil` otherwise.
    private let pipeline: String?
    /// The hub's record of who sent the value being handled, for a failure's sender.
    private let origin: ValueOrigin?
    // Confined to the loop, and never re-entered while one of these accesses is open:
    // the dynamic exclusivity check would only cost.
    @exclusivity(unchecked) private var upstream: (any Subscription)?
    @exclusivity(unchecked) private var pendingDemand = Subscribers.Demand.none
    @exclusivity(unchecked) private var granted: UInt64 = 0
    @exclusivity(unchecked) private var unlimited = false
    @exclusivity(unchecked) private(set) var isFinished = false
    /// Paced: what the client granted and was not asked upstream yet (with ``unlimited``: no bound).
    private var credit: UInt64 = 0
    /// Paced: asked upstream and not received yet.
    private var asked = 0
    /// Paced: waiting for the connection's queue to drain.
    private var waitingForRoom = false
    /// Paced: the bytes the last value queued.
    private var lastValueBytes = 0
    private let paced: Bool

    /// The most values a paced subscriber asks upstream for at a time (fewer when its
    /// values are large: as many as fit in its connection's replay watermark).
    static let pacedWindow = 64

    /// The largest exact total; at or beyond it demand is unlimited.
    static let unlimitedThreshold: UInt64 = (1 << 53) - 1

    init(
        id: UInt64, batch: Bool, outbound: SessionOutbound, subscriptions: SessionSubscriptions,
        counters: NameCounters, pipeline: String? = nil, origin: ValueOrigin? = nil, paced: Bool = false
    ) {
        self.paced = paced
        self.id = id
        self.batch = batch
        self.envelope = NextEnvelope(id: id)
        self.outbound = outbound
        self.subscriptions = subscriptions
        self.counters = counters
        self.pipeline = pipeline
        self.origin = origin
    }

    /// Adds the client's demand, as `request` or the initial `demand` of `subscribe`.
    func grant(_ demand: Subscribers.Demand) {
        guard !isFinished, !unlimited, demand > 0 else { return }
        let effective: Subscribers.Demand
        if let n = demand.max, granted + UInt64(n) < RemoteSubscriber.unlimitedThreshold {
            granted += UInt64(n)
            effective = demand
        } else {
            unlimited = true
            effective = .unlimited
        }
        if paced {
            if !unlimited { credit += UInt64(demand.max ?? 0) }
            askForMore()
            return
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
        if paced {
            askForMore()
            return
        }
        if pendingDemand > 0 {
            let demand = pendingDemand
            pendingDemand = .none
            subscription.request(demand)
        }
    }

    func receive(_ input: Value) -> Subscribers.Demand {
        guard !isFinished else { return .none }
        counters.delivered &+= 1
        guard paced else {
            outbound.sendNext(input, envelope: envelope, batch: batch)
            return .none
        }
        let before = outbound.queuedBytes
        outbound.sendNext(input, envelope: envelope, batch: batch)
        lastValueBytes = outbound.queuedBytes - before
        received()
        return .none
    }

    /// Paced: one asked-for value went out; the next window once all have.
    private func received() {
        asked -= 1
        if asked <= 0 {
            asked = 0
            askForMore()
        }
    }

    /// Paced: asks upstream for the next window once the connection's queue has room.
    private func askForMore() {
        guard upstream != nil, !isFinished, asked == 0, !waitingForRoom, unlimited || credit > 0 else { return }
        waitingForRoom = true
        outbound.whenReady { [weak self] in
            guard let self else { return }
            waitingForRoom = false
            guard let upstream, !isFinished, asked == 0, unlimited || credit > 0 else { return }
            // A window of large values is smaller: it fits under the replay watermark
            // again, so that what one window queues stays far from the slow-consumer
            // bound. The first window is one value, whose size sets the next.
            let window = lastValueBytes == 0
                ? 1 : max(1, min(RemoteSubscriber.pacedWindow, outbound.replayWatermark / lastValueBytes))
            let count = unlimited ? window : Int(min(credit, UInt64(window)))
            if !unlimited { credit -= UInt64(count) }
            asked = count
            upstream.request(.max(count))
        }
    }

    /// The offset of the last value of a subject with history it queued.
    @exclusivity(unchecked) private var lastOffset: UInt64?

    /// A value of a subject with history, sent with its offset. In the batch form a value
    /// joins the open batch only when it follows the batch's last one (a batch carries its
    /// first offset; the others follow one by one); after a gap (values a full buffer
    /// dropped) it goes out on its own, which closes that batch.
    func receive(_ input: Value, offset: UInt64) -> Subscribers.Demand {
        guard !isFinished else { return .none }
        counters.delivered &+= 1
        let follows = lastOffset.map { $0 &+ 1 == offset } ?? true
        lastOffset = offset
        outbound.sendNext(input, offset: offset, envelope: envelope, batch: batch && follows)
        if paced { received() }
        return .none
    }

    /// Writes the end of the subscription, `complete` or `error` with its id, unless the
    /// client or the session ended it first.
    func receive(completion: Subscribers.Completion<HubError>) {
        guard !isFinished else { return }
        isFinished = true
        upstream = nil
        guard subscriptions.remove(self) else { return }
        switch completion {
        case .finished:
            outbound.send(.complete(id: id))
        case .failure(let error):
            if let pipeline, error.code == .failed {
                // A failure caused by a value fails while that value propagates: the
                // origin still names its sender (none for a timer's or a delay's).
                outbound.pipelineFailed(pipeline, subscription: id, error: error, sender: origin?.sender)
            }
            outbound.sendError(error, id: id, ack: nil)
        }
    }
}
