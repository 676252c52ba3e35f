import HubEngine
import HubLoop
import HubValue
import HubWire
import HubTransport

/// The subscription a ``HubPublisher`` gives its subscriber: one remote
/// subscription, loop-confined; `request` and `cancel` from other threads hop
/// to the loop.
///
/// To a subject with history it survives a lost connection: it remembers the epoch
/// and the offset of the last value it delivered, and on the next connection it
/// subscribes again `since` that offset with the demand still unmet, so its
/// subscriber sees neither a gap nor a duplicate, nor a failure. When the server no
/// longer holds those values (`recovered: false`) it fails with `resume_failed`.
final class RemoteSubscription<Downstream: Subscriber>: Subscription, RemoteSubscriptionEndpoint, @unchecked Sendable
where Downstream.Input: HubDelivery, Downstream.Failure == HubClientError {
    private enum Phase {
        /// Not sent yet: demand accumulates into `subscribe`'s `demand`.
        case pending
        /// Sent with this id.
        case live(UInt64)
        /// Waiting for the next connection to subscribe again.
        case resuming
        /// Cancelled, completed or failed.
        case terminated
    }

    private let core: ClientCore
    private let target: SubscribeRequest.Target
    private let options: SubscribeOptions
    private var downstream: Downstream?
    private var phase = Phase.pending
    private var started = false
    /// Demand the subscriber granted in total, and values delivered to it.
    private var granted = Subscribers.Demand.none
    private var delivered = 0
    /// Demand granted while no `subscribe` was on the wire: it goes out with the next one.
    private var unsent = Subscribers.Demand.none
    /// The epoch of the subject's history (`nil`: no history seen, cannot resume).
    private var epoch: String?
    /// Where the next `subscribe` starts (the original `since`, then after the last
    /// value delivered).
    private var since: HistorySince?
    /// Whether the `subscribe` on the wire is a resumption.
    private var resumed = false

    init(core: ClientCore, target: SubscribeRequest.Target, options: SubscribeOptions, subscriber: Downstream) {
        self.core = core
        self.target = target
        self.options = options
        self.downstream = subscriber
        self.since = options.since
    }

    /// Opens the remote subscription (after the subscriber received this object).
    func start() {
        guard !started else { return }
        started = true
        guard case .pending = phase else { return }
        core.open(self)
    }

    func request(_ demand: Subscribers.Demand) {
        guard core.eventLoop.inEventLoop else {
            let hop = LoopBound({ self.request(demand) }, eventLoop: core.eventLoop)
            core.eventLoop.execute { hop.value() }
            return
        }
        guard demand != .none else { return }
        switch phase {
        case .pending, .resuming:
            granted += demand
            unsent += demand
        case let .live(id):
            granted += demand
            core.request(demand, id: id)
        case .terminated:
            break
        }
    }

    func cancel() {
        guard core.eventLoop.inEventLoop else {
            let hop = LoopBound({ self.cancel() }, eventLoop: core.eventLoop)
            core.eventLoop.execute { hop.value() }
            return
        }
        let previous = phase
        phase = .terminated
        downstream = nil
        switch previous {
        case let .live(id): core.cancel(id: id)
        case .resuming: core.forgetResuming(self)
        case .pending, .terminated: break
        }
    }

    // MARK: RemoteSubscriptionEndpoint

    func takeSubscribeRequest() -> SubscribeRequest? {
        switch phase {
        case .pending, .resuming: break
        case .live, .terminated: return nil
        }
        let request = SubscribeRequest(
            target: target, demand: WireDemand(unsent), batch: options.batch, buffer: options.buffer,
            overflow: options.overflow, since: since)
        unsent = .none
        return request
    }

    func didOpen(id: UInt64) {
        phase = .live(id)
    }

    func confirmed(history: HistoryPosition?, recovered: Bool?) {
        guard case let .live(id) = phase else { return }
        guard let history else {
            epoch = nil
            return
        }
        if recovered == false, resumed || options.since != nil {
            // The values after the position asked for are gone: going on would hide a gap.
            let position: Value
            switch since {
            case let .offset(offset, epoch)?:
                position = ["offset": .int(Int64(offset)), "epoch": epoch.map(Value.string) ?? .null]
            case let .last(count)?:
                position = ["last": .int(Int64(count))]
            case nil:
                position = .null
            }
            core.cancel(id: id)
            fail(HubClientError(
                code: .resumeFailed,
                message: "the hub no longer holds the values after \(describe(since)) of '\(targetName)' "
                    + "(epoch now \(history.epoch), latest offset \(history.offset)): values were missed",
                data: position))
            return
        }
        epoch = history.epoch
        switch since {
        case let .offset(offset, _)? where recovered == true:
            since = .offset(offset, epoch: history.epoch)
        case .last? where recovered == true:
            break  // until a value arrives, asking for the last K again misses nothing
        default:
            since = .offset(history.offset, epoch: history.epoch)
        }
    }

    func deliver(_ value: Value, offset: UInt64?) {
        guard case let .live(id) = phase, let downstream else { return }
        delivered += 1
        if let offset, let epoch { since = .offset(offset, epoch: epoch) }
        let more = downstream.receive(Downstream.Input(delivering: value, offset: offset, epoch: epoch))
        if more != .none, case .live = phase {
            granted += more
            core.request(more, id: id)
        }
    }

    func prepareToResume() -> Bool {
        guard case .live = phase, epoch != nil, downstream != nil else { return false }
        phase = .resuming
        resumed = true
        // The demand the subscriber granted and has not received yet.
        if granted.isUnlimited {
            unsent = .unlimited
        } else {
            unsent = .max(Swift.max(0, (granted.max ?? 0) - delivered))
        }
        return true
    }

    func finish() {
        guard let downstream = terminate() else { return }
        downstream.receive(completion: .finished)
    }

    func fail(_ error: HubClientError) {
        guard let downstream = terminate() else { return }
        downstream.receive(completion: .failure(error))
    }

    private func terminate() -> Downstream? {
        if case .terminated = phase { return nil }
        phase = .terminated
        let downstream = self.downstream
        self.downstream = nil
        return downstream
    }

    private var targetName: String {
        switch target {
        case let .name(name): return name
        case let .pipeline(text): return text
        }
    }

    private func describe(_ since: HistorySince?) -> String {
        switch since {
        case let .offset(offset, epoch)?: return "offset \(offset)" + (epoch.map { " of epoch \($0)" } ?? "")
        case let .last(count)?: return "the last \(count) values"
        case nil: return "the start"
        }
    }
}
