import HubEngine
import HubValue
import HubWire
import HubTransport

/// The subscription a ``HubPublisher`` gives its subscriber: one remote
/// subscription, loop-confined; `request` and `cancel` from other threads hop
/// to the loop.
final class RemoteSubscription<Downstream: Subscriber>: Subscription, RemoteSubscriptionEndpoint, @unchecked Sendable
where Downstream.Input == Value, Downstream.Failure == HubClientError {
    private enum Phase {
        /// Not sent yet: demand accumulates into `subscribe`'s `demand`.
        case pending
        /// Sent with this id.
        case live(UInt64)
        /// Cancelled, completed or failed.
        case terminated
    }

    private let core: ClientCore
    private let target: SubscribeRequest.Target
    private let options: SubscribeOptions
    private var downstream: Downstream?
    private var phase = Phase.pending
    private var initialDemand = Subscribers.Demand.none
    private var started = false

    init(core: ClientCore, target: SubscribeRequest.Target, options: SubscribeOptions, subscriber: Downstream) {
        self.core = core
        self.target = target
        self.options = options
        self.downstream = subscriber
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
        case .pending:
            initialDemand += demand
        case let .live(id):
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
        if case let .live(id) = previous {
            core.cancel(id: id)
        }
    }

    // MARK: RemoteSubscriptionEndpoint

    func takeSubscribeRequest() -> SubscribeRequest? {
        guard case .pending = phase else { return nil }
        let request = SubscribeRequest(
            target: target, demand: WireDemand(initialDemand), batch: options.batch, buffer: options.buffer,
            overflow: options.overflow)
        initialDemand = .none
        return request
    }

    func didOpen(id: UInt64) {
        phase = .live(id)
    }

    func deliver(_ value: Value) {
        guard case let .live(id) = phase, let downstream else { return }
        let more = downstream.receive(value)
        if more != .none, case .live = phase {
            core.request(more, id: id)
        }
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
}
