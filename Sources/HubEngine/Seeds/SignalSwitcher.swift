/// The subscription shared by ``Publishers/Publish`` and ``Publishers/PublishAndRepeat``:
/// on each value of a signal it cancels the running inner publisher and subscribes to a new
/// one made by a closure (switch-to-latest, as the article's `map { make() }.switchToLatest()`).
///
/// - The signal is asked for `.unlimited` (as `switchToLatest` asks its outer upstream).
/// - The downstream's outstanding demand (requested minus delivered) is requested from each
///   new inner publisher when its subscription arrives; later requests go to the current inner.
/// - Values of a cancelled (replaced) inner are dropped.
/// - Completion: finishes when the signal has finished and no inner is running (at once if
///   none is, otherwise when the current one finishes); an inner that finishes while the
///   signal is live just leaves the publisher idle until the next signal. An inner failure
///   cancels the signal and fails the downstream.
/// - `cancel()` cancels the signal and the current inner.
internal final class SignalSwitcher<Downstream: Subscriber, Inner: Publisher>: Subscription
where Downstream.Input == Inner.Output, Downstream.Failure == Inner.Failure {
    typealias Output = Inner.Output
    typealias Failure = Inner.Failure

    private var downstream: Downstream?
    private let make: () -> Inner
    private var signalSubscription: (any Subscription)?
    private var signalFinished = false
    /// The generation of the current inner; events of older ones are dropped.
    private var generation = 0
    /// An inner publisher is subscribed and has not completed.
    private var innerRunning = false
    private var innerSubscription: (any Subscription)?
    private var demand = Subscribers.Demand.none

    init(downstream: Downstream, make: @escaping () -> Inner) {
        self.downstream = downstream
        self.make = make
    }

    private var isActive: Bool { downstream != nil }

    /// Subscribes to `signal`; when `runFirst`, runs an inner publisher first.
    func start<S: Publisher>(signal: S, runFirst: Bool) where S.Failure == Never {
        if runFirst { switchInner() }
        guard isActive else { return }
        signal.receive(subscriber: SignalSide(parent: self))
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, isActive else { return }
        self.demand += demand
        innerSubscription?.request(demand)
    }

    func cancel() {
        guard downstream.take() != nil else { return }
        generation += 1
        innerRunning = false
        let inner = innerSubscription.take()
        let signal = signalSubscription.take()
        inner?.cancel()
        signal?.cancel()
    }

    // MARK: signal

    fileprivate func signalSubscribed(_ subscription: any Subscription) {
        guard isActive, signalSubscription == nil, !signalFinished else {
            subscription.cancel()
            return
        }
        signalSubscription = subscription
        subscription.request(.unlimited)
    }

    fileprivate func signalFired() {
        guard isActive, !signalFinished else { return }
        switchInner()
    }

    fileprivate func signalCompleted() {
        guard isActive, !signalFinished else { return }
        signalFinished = true
        signalSubscription = nil
        if !innerRunning { finish(.finished) }
    }

    // MARK: inner

    private func switchInner() {
        generation += 1
        innerRunning = true
        innerSubscription.take()?.cancel()
        let publisher = make()
        guard isActive else { return }
        publisher.receive(subscriber: InnerSide(parent: self, generation: generation))
    }

    fileprivate func innerSubscribed(_ subscription: any Subscription, generation: Int) {
        guard isActive, generation == self.generation, innerRunning, innerSubscription == nil else {
            subscription.cancel()
            return
        }
        innerSubscription = subscription
        if demand > 0 { subscription.request(demand) }
    }

    fileprivate func innerValue(_ value: Output, generation: Int) -> Subscribers.Demand {
        guard generation == self.generation, innerRunning, let downstream else { return .none }
        demand -= 1
        let more = downstream.receive(value)
        if more > 0, isActive { demand += more }
        return more
    }

    fileprivate func innerCompleted(_ completion: Subscribers.Completion<Failure>, generation: Int) {
        guard isActive, generation == self.generation, innerRunning else { return }
        innerRunning = false
        innerSubscription = nil
        switch completion {
        case .finished:
            if signalFinished { finish(.finished) }
        case .failure:
            signalSubscription.take()?.cancel()
            finish(completion)
        }
    }

    private func finish(_ completion: Subscribers.Completion<Failure>) {
        guard let downstream = downstream.take() else { return }
        downstream.receive(completion: completion)
    }

    private struct SignalSide<Input>: Subscriber {
        typealias Failure = Never
        let parent: SignalSwitcher
        let combineIdentifier = CombineIdentifier()

        func receive(subscription: any Subscription) { parent.signalSubscribed(subscription) }
        func receive(_ input: Input) -> Subscribers.Demand {
            parent.signalFired()
            return .none
        }
        func receive(completion: Subscribers.Completion<Never>) { parent.signalCompleted() }
    }

    private struct InnerSide: Subscriber {
        typealias Input = Output
        let parent: SignalSwitcher
        let generation: Int
        let combineIdentifier = CombineIdentifier()

        func receive(subscription: any Subscription) { parent.innerSubscribed(subscription, generation: generation) }
        func receive(_ input: Input) -> Subscribers.Demand { parent.innerValue(input, generation: generation) }
        func receive(completion: Subscribers.Completion<Failure>) { parent.innerCompleted(completion, generation: generation) }
    }
}
