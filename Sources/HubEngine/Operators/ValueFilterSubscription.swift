/// What a value-filtering operator does with one upstream value.
internal enum ValueFilterStep<Value, Failure: Error> {
    /// Deliver this value downstream; the downstream's answer is the new demand.
    case emit(Value)
    /// Drop the value and ask upstream for one more in its place.
    case skip
    /// Stop: cancel upstream and finish downstream.
    case finish
    /// Stop: cancel upstream and fail downstream with this error.
    case fail(Failure)
}

/// The shared subscription behind the operators that map or filter values one for one and may stop
/// early (`tryMap`, `tryFilter`, `tryCompactMap`, `tryScan`, `removeDuplicates`, `tryRemoveDuplicates`).
///
/// It stands between upstream and downstream so that, once it has stopped (a thrown error, a
/// cancel or a completion), nothing more reaches the downstream. Demand passes through unchanged;
/// a skipped value gives back `.max(1)`.
internal final class ValueFilterSubscription<Input, UpstreamFailure: Error, Downstream: Subscriber>: Subscriber, Subscription {
    typealias Failure = UpstreamFailure
    typealias Step = (Input) -> ValueFilterStep<Downstream.Input, Downstream.Failure>

    private enum State {
        case awaitingSubscription
        case connected(any Subscription)
        case done
    }

    private let downstream: Downstream
    private let step: Step
    private let mapFailure: (UpstreamFailure) -> Downstream.Failure
    private var state = State.awaitingSubscription

    init(downstream: Downstream, mapFailure: @escaping (UpstreamFailure) -> Downstream.Failure, step: @escaping Step) {
        self.downstream = downstream
        self.mapFailure = mapFailure
        self.step = step
    }

    func receive(subscription: any Subscription) {
        guard case .awaitingSubscription = state else {
            subscription.cancel()
            return
        }
        state = .connected(subscription)
        downstream.receive(subscription: self)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        guard case .connected(let upstream) = state else { return .none }
        switch step(input) {
        case .emit(let value):
            let more = downstream.receive(value)
            guard case .connected = state else { return .none }
            return more
        case .skip:
            return .max(1)
        case .finish:
            state = .done
            upstream.cancel()
            downstream.receive(completion: .finished)
        case .fail(let error):
            state = .done
            upstream.cancel()
            downstream.receive(completion: .failure(error))
        }
        return .none
    }

    func receive(completion: Subscribers.Completion<UpstreamFailure>) {
        guard case .connected = state else { return }
        state = .done
        downstream.receive(completion: completion.mapError(mapFailure))
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, case .connected(let upstream) = state else { return }
        upstream.request(demand)
    }

    func cancel() {
        guard case .connected(let upstream) = state else {
            state = .done
            return
        }
        state = .done
        upstream.cancel()
    }
}
