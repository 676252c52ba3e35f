/// The shared subscription behind `drop(while:)`, `tryDrop(while:)`, `prefix(while:)` and
/// `tryPrefix(while:)`: the leading run of values that satisfy a predicate is dropped
/// (``Mode/drop``) or is all that is republished (``Mode/prefix``).
///
/// Demand passes through; a dropped value gives back a demand of one. The first value that
/// fails the predicate ends the run: `drop` delivers it and every later value without asking
/// the predicate again; `prefix` does not publish it, cancels the upstream and finishes. An
/// error from the predicate cancels the upstream and fails the downstream with it. After a
/// completion or a cancel nothing more reaches the downstream, which is then released.
internal final class WhilePredicateSubscription<Input, UpstreamFailure: Error, Downstream: Subscriber>: Subscriber, Subscription
where Downstream.Input == Input {
    typealias Failure = UpstreamFailure

    /// What happens to the leading run of values that satisfy the predicate.
    enum Mode {
        /// The run is dropped; everything from the first failing value on is republished.
        case drop
        /// The run is republished; the first failing value finishes the stream.
        case prefix
    }

    private let mode: Mode
    private var downstream: Downstream?
    private var upstream: (any Subscription)?
    private var subscribed = false
    /// Set when a `drop` run has ended: the predicate is not asked again.
    private var runEnded = false
    private let predicate: (Input) -> Result<Bool, Downstream.Failure>
    private let mapFailure: (UpstreamFailure) -> Downstream.Failure

    init(
        mode: Mode,
        downstream: Downstream,
        predicate: @escaping (Input) -> Result<Bool, Downstream.Failure>,
        mapFailure: @escaping (UpstreamFailure) -> Downstream.Failure
    ) {
        self.mode = mode
        self.downstream = downstream
        self.predicate = predicate
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
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        guard let downstream else { return .none }
        if runEnded { return downstream.receive(input) }
        switch (mode, predicate(input)) {
        case (.drop, .success(true)):
            return .max(1)
        case (.drop, .success(false)):
            runEnded = true
            return downstream.receive(input)
        case (.prefix, .success(true)):
            return downstream.receive(input)
        case (.prefix, .success(false)):
            self.downstream = nil
            upstream.take()?.cancel()
            downstream.receive(completion: .finished)
        case (_, .failure(let error)):
            self.downstream = nil
            upstream.take()?.cancel()
            downstream.receive(completion: .failure(error))
        }
        return .none
    }

    func receive(completion: Subscribers.Completion<UpstreamFailure>) {
        guard let downstream = downstream.take() else { return }
        upstream = nil
        downstream.receive(completion: completion.mapError(mapFailure))
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, downstream != nil, let upstream else { return }
        upstream.request(demand)
    }

    func cancel() {
        downstream = nil
        upstream.take()?.cancel()
    }
}
