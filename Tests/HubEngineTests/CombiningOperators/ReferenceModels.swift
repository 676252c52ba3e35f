import OpenCombine

/// Reference models of the combining operators OpenCombine does not have, `merge` and
/// `combineLatest`, written plainly from their documented rules (no fast paths, one queue of
/// work, everything recomputed) as OpenCombine publishers, so that they are the OpenCombine
/// side of the one differential harness.
///
/// The rules they follow are Combine's, as the engine documents them:
/// - the inputs are subscribed first, then the downstream receives the subscription; a
///   completion that happens while the inputs are subscribed is delivered right after it;
/// - a failure of any input is delivered at once and cancels the others;
/// - nothing is delivered inside a delivery: a value sent from inside the downstream's
///   `receive(_:)` is handled once the delivery under way has returned.
enum ReferenceModel {
    /// `Publishers.MergeMany`: while the downstream's demand is finite, each input has one
    /// request outstanding (`.max(1)` at subscription, one more once its value has been
    /// delivered); a value without demand waits (one per input) and waiting values go out
    /// in input order, one per input and pass; when the demand becomes unlimited every input
    /// is asked for `.unlimited`. It finishes once every input (all of them subscribed) has
    /// finished and nothing waits.
    struct Merge<Output>: OpenCombine.Publisher {
        typealias Failure = TestError
        let inputs: [AnyPublisher<Output, TestError>]

        func receive<S: OpenCombine.Subscriber>(subscriber: S) where S.Input == Output, S.Failure == TestError {
            let model = MergeModel(downstream: AnySubscriber(subscriber), count: inputs.count)
            for (index, input) in inputs.enumerated() { input.subscribe(model.side(index)) }
            model.attached()
        }
    }

    /// `Publishers.CombineLatest` over any number of inputs: a request is passed to every
    /// input; a value stores its input's latest; when every input has one and the downstream
    /// has demand, the array of the latest values goes out and the demand the downstream
    /// answers goes to the input that sent the value. Finishes once every input has finished.
    struct CombineLatest<Element>: OpenCombine.Publisher {
        typealias Output = [Element]
        typealias Failure = TestError
        let inputs: [AnyPublisher<Element, TestError>]

        func receive<S: OpenCombine.Subscriber>(subscriber: S) where S.Input == [Element], S.Failure == TestError {
            let model = CombineLatestModel(downstream: AnySubscriber(subscriber), count: inputs.count)
            for (index, input) in inputs.enumerated() { input.subscribe(model.side(index)) }
            model.attached()
        }
    }
}

/// What both models share: the inputs' subscriptions, the downstream, terminal events.
class CombiningModel<Output>: OpenCombine.Subscription {
    var downstream: AnySubscriber<Output, TestError>?
    var subscriptions: [OpenCombine.Subscription?]
    var finished: [Bool]
    var established = false
    var pending: Subscribers.Completion<TestError>?
    var done = false
    var demand = Subscribers.Demand.none
    /// A delivery is under way (values arriving now wait).
    var delivering = false

    init(downstream: AnySubscriber<Output, TestError>, count: Int) {
        self.downstream = downstream
        subscriptions = Array(repeating: nil, count: count)
        finished = Array(repeating: false, count: count)
    }

    func attached() {
        established = true
        downstream?.receive(subscription: self)
        if let completion = pending {
            pending = nil
            deliver(completion)
        }
    }

    func end(_ completion: Subscribers.Completion<TestError>) {
        guard !done else { return }
        done = true
        let all = subscriptions
        subscriptions = Array(repeating: nil, count: all.count)
        for s in all { s?.cancel() }
        dropState()
        if established { deliver(completion) } else { pending = completion }
    }

    func deliver(_ completion: Subscribers.Completion<TestError>) {
        let target = downstream
        downstream = nil
        target?.receive(completion: completion)
    }

    func cancel() {
        guard !done else { return }
        done = true
        downstream = nil
        let all = subscriptions
        subscriptions = Array(repeating: nil, count: all.count)
        for s in all { s?.cancel() }
        dropState()
    }

    func request(_ demand: Subscribers.Demand) {}

    func dropState() {}

    func gotSubscription(_ subscription: OpenCombine.Subscription, at index: Int) {
        guard !done else { return subscription.cancel() }
        subscriptions[index] = subscription
    }

    func gotValue(_ value: Any, at index: Int) -> Subscribers.Demand { .none }

    func gotCompletion(_ completion: Subscribers.Completion<TestError>, at index: Int) {}

    func side<Input>(_ index: Int) -> AnySubscriber<Input, TestError> {
        AnySubscriber(
            receiveSubscription: { [self] in self.gotSubscription($0, at: index) },
            receiveValue: { [self] in self.gotValue($0, at: index) },
            receiveCompletion: { [self] in self.gotCompletion($0, at: index) })
    }
}

final class MergeModel<Output>: CombiningModel<Output> {
    private var waiting: [Output?]
    private var allAttached = false
    private var unlimited = false

    override init(downstream: AnySubscriber<Output, TestError>, count: Int) {
        waiting = Array(repeating: nil, count: count)
        super.init(downstream: downstream, count: count)
    }

    override func attached() {
        allAttached = true
        // Inputs that all finished while being subscribed end it now (a merge of nothing
        // waits for the first request).
        if !finished.isEmpty { finishIfDone() }
        super.attached()
    }

    override func gotSubscription(_ subscription: OpenCombine.Subscription, at index: Int) {
        super.gotSubscription(subscription, at: index)
        guard !done else { return }
        subscription.request(demand == .unlimited ? .unlimited : .max(1))
    }

    override func gotValue(_ value: Any, at index: Int) -> Subscribers.Demand {
        guard !done, let value = value as? Output else { return .none }
        waiting[index] = value
        drain()
        return .none
    }

    override func gotCompletion(_ completion: Subscribers.Completion<TestError>, at index: Int) {
        guard !done else { return }
        subscriptions[index] = nil
        switch completion {
        case .failure: end(completion)
        case .finished:
            finished[index] = true
            finishIfDone()
        }
    }

    override func request(_ demand: Subscribers.Demand) {
        guard !done else { return }
        self.demand += demand
        drain()
    }

    override func dropState() {
        waiting = Array(repeating: nil, count: waiting.count)
    }

    /// Waiting values go out in input order, one per input and pass, while there is demand.
    private func drain() {
        guard !delivering, established else { return }
        delivering = true
        var delivered = true
        while delivered, !done, demand > 0 {
            delivered = false
            for index in waiting.indices where demand > 0 && !done {
                guard let value = waiting[index] else { continue }
                waiting[index] = nil
                delivered = true
                demand -= 1
                demand += downstream?.receive(value) ?? .none
                if demand != .unlimited { subscriptions[index]?.request(.max(1)) }
            }
        }
        delivering = false
        guard !done else { return }
        if demand == .unlimited, !unlimited {
            unlimited = true
            for s in subscriptions { s?.request(.unlimited) }
        }
        finishIfDone()
    }

    private func finishIfDone() {
        guard allAttached, !done, !delivering else { return }
        guard finished.allSatisfy({ $0 }), waiting.allSatisfy({ $0 == nil }) else { return }
        end(.finished)
    }
}

final class CombineLatestModel<Element>: CombiningModel<[Element]> {
    private var latest: [Element?]
    /// Arrays sent from inside a delivery with demand left: delivered, in order, once it returns.
    private var queued: [(array: [Element], from: Int)] = []

    override init(downstream: AnySubscriber<[Element], TestError>, count: Int) {
        latest = Array(repeating: nil, count: count)
        super.init(downstream: downstream, count: count)
    }

    override func gotValue(_ value: Any, at index: Int) -> Subscribers.Demand {
        guard !done, let value = value as? Element else { return .none }
        latest[index] = value
        guard demand > 0, latest.allSatisfy({ $0 != nil }) else { return .none }
        let array = latest.map { $0! }
        demand -= 1
        if delivering {
            queued.append((array, index))
            return .none
        }
        delivering = true
        let answer = downstream?.receive(array) ?? .none
        demand += answer
        while !done, !queued.isEmpty {
            let (next, from) = queued.removeFirst()
            let more = downstream?.receive(next) ?? .none
            demand += more
            if !done, more > 0 { subscriptions[from]?.request(more) }
        }
        delivering = false
        queued = []
        return done ? .none : answer
    }

    override func gotCompletion(_ completion: Subscribers.Completion<TestError>, at index: Int) {
        guard !done else { return }
        subscriptions[index] = nil
        switch completion {
        case .failure: end(completion)
        case .finished:
            finished[index] = true
            if finished.allSatisfy({ $0 }) { end(.finished) }
        }
    }

    override func request(_ demand: Subscribers.Demand) {
        guard !done else { return }
        self.demand += demand
        for s in subscriptions { s?.request(demand) }
    }

    override func dropState() {
        latest = Array(repeating: nil, count: latest.count)
        queued = []
    }
}
