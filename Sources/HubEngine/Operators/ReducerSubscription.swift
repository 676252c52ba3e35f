import HubValue

/// What a reducing operator does after folding one upstream value into its result.
internal enum ReducerStep<Failure: Error> {
    /// Keep consuming upstream values.
    case proceed
    /// The result is decided: cancel upstream and deliver the result (when demanded).
    case finish
    /// Cancel upstream and fail downstream with this error at once.
    case fail(Failure)
}

/// The shared subscription behind the operators that fold the whole upstream into at most one
/// value (`reduce`, `count`, `min`/`max`, `collect()`, `allSatisfy`, `contains`, and their `try`
/// variants), with the demand behaviour of Combine (and OpenCombine's `ReduceProducer`):
///
/// - it asks upstream for `.unlimited` as soon as it has handed itself to the downstream, whatever
///   the downstream's demand;
/// - the result and `.finished` go downstream only once the downstream has requested something:
///   when the upstream ends (or the result is decided early) before any demand, the result is held
///   until the first non-zero request;
/// - a failure (upstream's or a thrown error) is delivered at once, without demand;
/// - after `cancel()` nothing is delivered, not even a held result.
///
/// With a `state`, the result so far is checkpointed (snapshot kind `kind`): a subscription
/// restores it and folds on from there.
internal final class ReducerSubscription<Input, UpstreamFailure: Error, Downstream: Subscriber>: Subscriber, Subscription {
    typealias Failure = UpstreamFailure
    typealias Step = (inout Downstream.Input?, Input) -> ReducerStep<Downstream.Failure>

    private let downstream: Downstream
    private let step: Step
    private let mapFailure: (UpstreamFailure) -> Downstream.Failure
    private var result: Downstream.Input?
    private var upstream: (any Subscription)?
    private var subscribed = false
    private var downstreamRequested = false
    private var upstreamDone = false
    private var terminated = false

    init(
        downstream: Downstream, initial: Downstream.Input?,
        mapFailure: @escaping (UpstreamFailure) -> Downstream.Failure,
        state: OperatorState<Downstream.Input>? = nil, kind: String = "reduce", step: @escaping Step
    ) {
        self.downstream = downstream
        self.result = initial
        self.mapFailure = mapFailure
        self.step = step
        guard let state else { return }
        let codec = state.codec.optional
        state.restore(kind) { snapshot throws(CheckpointError) in self.result = try snapshot.field("result", codec) }
        state.attach(kind) { [weak self] in
            guard let self, !self.upstreamDone else { return nil }
            return ["result": codec.encode(self.result)]
        }
    }

    func receive(subscription: any Subscription) {
        guard !subscribed else {
            subscription.cancel()
            return
        }
        subscribed = true
        upstream = subscription
        downstream.receive(subscription: self)
        // The downstream may have cancelled from inside receive(subscription:).
        upstream?.request(.unlimited)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        guard let upstream, !upstreamDone else { return .none }
        switch step(&result, input) {
        case .proceed:
            break
        case .finish:
            upstreamDone = true
            self.upstream = nil
            upstream.cancel()
            if downstreamRequested { deliver() }
        case .fail(let error):
            upstreamDone = true
            terminated = true
            self.upstream = nil
            upstream.cancel()
            downstream.receive(completion: .failure(error))
        }
        return .none
    }

    func receive(completion: Subscribers.Completion<UpstreamFailure>) {
        guard upstream != nil, !upstreamDone else { return }
        upstreamDone = true
        upstream = nil
        switch completion {
        case .finished:
            if downstreamRequested { deliver() }
        case .failure(let error):
            terminated = true
            downstream.receive(completion: .failure(mapFailure(error)))
        }
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, !downstreamRequested, !terminated else { return }
        downstreamRequested = true
        if upstreamDone { deliver() }
    }

    func cancel() {
        terminated = true
        result = nil
        upstream.take()?.cancel()
    }

    /// Sends the result (if any) and `.finished`, once.
    private func deliver() {
        guard !terminated else { return }
        terminated = true
        if let value = result.take() { _ = downstream.receive(value) }
        downstream.receive(completion: .finished)
    }
}
