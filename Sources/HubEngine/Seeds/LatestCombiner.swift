import HubValue

/// The subscription shared by ``Publishers/ReduceLatest2``, ``Publishers/ReduceLatest3`` and
/// ``Publishers/AccumulateLatestMany``: it subscribes to a fixed number of upstream
/// publishers, remembers that one of them produced a value, and emits `snapshot()` to the
/// downstream when it has demand.
///
/// The latest values themselves live in the publisher's own storage (written by the `store`
/// closure given to ``attach(_:at:store:)``, read by `snapshot`), so that upstreams of
/// different types can share this one implementation.
///
/// - Demand: every upstream is read with `.unlimited` demand as soon as it subscribes, as the
///   article's `ReduceLatestSubscription` reads its upstreams with `sink`: the combiner always
///   knows the latest value of each, and an upstream that buffers values for its subscriber
///   (a hub's hot source) never holds stale ones. The downstream's demand only decides when
///   an output is emitted.
/// - Coalescing: values arriving while the downstream has no demand (or before `snapshot`
///   can produce an output) are not queued; one output built from the latest values is
///   emitted when demand arrives, and nothing is emitted again until a new value arrives
///   (never a stale or repeated output).
/// - Completion: finishes once every upstream has finished (an output still waiting for demand
///   is dropped); fails as soon as one upstream fails, cancelling the others.
/// - With zero upstreams, emits `snapshot()` once on the first demand, then finishes (as `Just`).
/// - Reentrancy: a value, a request or a cancel arriving from inside the downstream's
///   `receive(_:)` is taken into account by the running emission loop.
internal final class LatestCombiner<Downstream: Subscriber>: Subscription {
    typealias Output = Downstream.Input
    typealias Failure = Downstream.Failure

    private var downstream: Downstream?
    private let snapshot: () -> Output?
    private var subscriptions: [(any Subscription)?]
    private var finished: [Bool]
    private var remaining: Int
    private var demand = Subscribers.Demand.none
    /// A value arrived that has not been emitted yet.
    private var pending = false
    private var emitting = false

    /// A combiner of `count` upstreams emitting `snapshot()` (which returns `nil` while no output can be formed).
    init(downstream: Downstream, count: Int, snapshot: @escaping () -> Output?) {
        self.downstream = downstream
        self.snapshot = snapshot
        subscriptions = Array(repeating: nil, count: count)
        finished = Array(repeating: false, count: count)
        remaining = count
        pending = count == 0
    }

    /// Whether the combiner still delivers events (not cancelled, not completed).
    var isActive: Bool { downstream != nil }

    /// Whether a value arrived that has not been emitted yet (for a checkpoint), or sets it
    /// (a restored checkpoint's, before the upstreams are attached).
    var hasPending: Bool {
        get { pending }
        set { pending = newValue }
    }

    /// Restores, from `state`, the latest values (through `write`, `count` of them) and
    /// whether one waits to be emitted, and attaches their saving (read with `read`).
    func checkpoint<Element>(
        _ state: OperatorState<Element>, kind: String, count: Int,
        read: @escaping () -> [Element?]?, write: ([Element?]) -> Void
    ) {
        let codec = state.codec.optional.array
        state.restore(kind) { snapshot throws(CheckpointError) in
            let restored = try snapshot.field("latest", codec)
            guard restored.count == count else {
                throw CheckpointError(.malformed, "\(kind) of \(count) publishers restored \(restored.count) values")
            }
            let pending = try snapshot.field("pending", .bool)
            write(restored)
            self.pending = pending
        }
        state.attach(kind) { [weak self] in
            guard let self, self.isActive, let values = read() else { return nil }
            return ["latest": codec.encode(values), "pending": .bool(self.pending)]
        }
    }

    /// Subscribes to `publisher` as upstream number `index`; its values go through `store` first.
    func attach<P: Publisher>(_ publisher: P, at index: Int, store: @escaping (P.Output) -> Void)
    where P.Failure == Failure {
        guard isActive else { return }
        publisher.receive(subscriber: Side(parent: self, index: index, store: store))
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, isActive else { return }
        self.demand += demand
        drain()
    }

    func cancel() {
        guard downstream.take() != nil else { return }
        cancelUpstreams()
    }

    // MARK: upstream events

    fileprivate func received(subscription: any Subscription, at index: Int) {
        guard isActive, !finished[index], subscriptions[index] == nil else {
            subscription.cancel()
            return
        }
        subscriptions[index] = subscription
        subscription.request(.unlimited)
    }

    fileprivate func received(valueAt index: Int) {
        pending = true
        drain()
    }

    fileprivate func received(completion: Subscribers.Completion<Failure>, at index: Int) {
        guard isActive, !finished[index] else { return }
        finished[index] = true
        subscriptions[index] = nil
        switch completion {
        case .finished:
            remaining -= 1
            if remaining == 0 { complete(.finished) }
        case .failure:
            complete(completion)
        }
    }

    // MARK: private

    private func drain() {
        guard !emitting else { return }
        emitting = true
        defer { emitting = false }
        while pending, demand > 0, let downstream, let output = snapshot() {
            pending = false
            demand -= 1
            let more = downstream.receive(output)
            if more > 0, isActive { demand += more }
            if finished.isEmpty, isActive { complete(.finished) }
        }
    }

    private func complete(_ completion: Subscribers.Completion<Failure>) {
        guard let downstream = downstream.take() else { return }
        cancelUpstreams()
        downstream.receive(completion: completion)
    }

    private func cancelUpstreams() {
        let current = subscriptions
        subscriptions = Array(repeating: nil, count: current.count)
        for index in current.indices where !finished[index] {
            finished[index] = true
            current[index]?.cancel()
        }
    }

    private struct Side<Input>: Subscriber {
        let parent: LatestCombiner
        let index: Int
        let store: (Input) -> Void
        let combineIdentifier = CombineIdentifier()

        func receive(subscription: any Subscription) { parent.received(subscription: subscription, at: index) }
        func receive(_ input: Input) -> Subscribers.Demand {
            guard parent.isActive, !parent.finished[index] else { return .none }
            store(input)
            parent.received(valueAt: index)
            return .none
        }
        func receive(completion: Subscribers.Completion<Failure>) { parent.received(completion: completion, at: index) }
    }
}
