/// What a first/last operator does with one upstream value.
internal enum FirstLastDecision<Failure: Error> {
    /// Ignore the value.
    case skip
    /// Remember the value as the current result and keep going.
    case keep
    /// Remember the value, cancel upstream and finish (once the downstream has asked).
    case keepAndFinish
    /// Cancel upstream and fail with the error.
    case fail(Failure)
}

/// The subscription shared by `first`, `first(where:)`, `tryFirst(where:)`, `last`,
/// `last(where:)` and `tryLast(where:)`: it requests `.unlimited` upstream once the
/// downstream has its subscription, remembers at most one value, and delivers it
/// followed by `finished` when both the upstream is done and the downstream has
/// asked for anything, as OpenCombine's `ReduceProducer` does.
///
/// A failure is delivered at once, without demand. After `cancel()` nothing is
/// delivered (OpenCombine still delivers a result that was pending at cancel time;
/// HubEngine does not).
internal final class FirstLastProducer<Input, UpstreamFailure: Error, Downstream: Subscriber>: Subscriber, Subscription
where Downstream.Input == Input {
    typealias Failure = UpstreamFailure

    private var downstream: Downstream?
    private var upstream: (any Subscription)?
    private var result: Input?
    private var downstreamRequested = false
    private var upstreamDone = false
    private var subscribed = false
    private let decide: (Input) -> FirstLastDecision<Downstream.Failure>
    private let mapFailure: (UpstreamFailure) -> Downstream.Failure

    init(
        downstream: Downstream,
        decide: @escaping (Input) -> FirstLastDecision<Downstream.Failure>,
        mapFailure: @escaping (UpstreamFailure) -> Downstream.Failure
    ) {
        self.downstream = downstream
        self.decide = decide
        self.mapFailure = mapFailure
    }

    func receive(subscription: any Subscription) {
        guard !subscribed, let downstream else {
            subscription.cancel()
            return
        }
        subscribed = true
        upstream = subscription
        downstream.receive(subscription: self)
        // The downstream may have cancelled, or the whole exchange may be over already.
        if !upstreamDone, let upstream { upstream.request(.unlimited) }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        guard !upstreamDone, downstream != nil else { return .none }
        switch decide(input) {
        case .skip:
            break
        case .keep:
            result = input
        case .keepAndFinish:
            result = input
            upstreamDone = true
            upstream.take()?.cancel()
            if downstreamRequested { deliverResult() }
        case .fail(let error):
            upstreamDone = true
            result = nil
            upstream.take()?.cancel()
            downstream.take()?.receive(completion: .failure(error))
        }
        return .none
    }

    func receive(completion: Subscribers.Completion<UpstreamFailure>) {
        guard !upstreamDone, downstream != nil else { return }
        upstreamDone = true
        upstream = nil
        switch completion {
        case .finished:
            if downstreamRequested { deliverResult() }
        case .failure(let error):
            result = nil
            downstream.take()?.receive(completion: .failure(mapFailure(error)))
        }
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, downstream != nil, !downstreamRequested else { return }
        downstreamRequested = true
        if upstreamDone { deliverResult() }
    }

    func cancel() {
        downstream = nil
        result = nil
        upstreamDone = true
        upstream.take()?.cancel()
    }

    private func deliverResult() {
        guard let downstream = downstream.take() else { return }
        if let value = result.take() { _ = downstream.receive(value) }
        downstream.receive(completion: .finished)
    }
}
