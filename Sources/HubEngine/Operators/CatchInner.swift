/// The subscription shared by ``Publishers/Catch`` and ``Publishers/TryCatch``: it relays the
/// upstream, then, after a failure, the replacement publisher, keeping the outstanding demand.
internal final class CatchInner<Upstream: Publisher, NewPublisher: Publisher, Downstream: Subscriber>: Subscription
where Upstream.Output == NewPublisher.Output, Downstream.Input == Upstream.Output {
    /// Makes the replacement publisher, or the error to deliver instead (TryCatch's thrown error).
    typealias Handler = (Upstream.Failure) -> Result<NewPublisher, Downstream.Failure>

    private enum State {
        case awaitingUpstream
        case upstream(any Subscription)
        case awaitingReplacement
        case replacement(any Subscription)
        case terminal
    }

    private var state = State.awaitingUpstream
    private var downstream: Downstream?
    private let handler: Handler
    private let convert: (NewPublisher.Failure) -> Downstream.Failure
    /// The downstream demand not yet satisfied by the upstream.
    private var demand = Subscribers.Demand.none

    init(downstream: Downstream, convert: @escaping (NewPublisher.Failure) -> Downstream.Failure, handler: @escaping Handler) {
        self.downstream = downstream
        self.convert = convert
        self.handler = handler
    }

    convenience init(downstream: Downstream, handler: @escaping Handler) where NewPublisher.Failure == Downstream.Failure {
        self.init(downstream: downstream, convert: { $0 }, handler: handler)
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0 else { return }
        switch state {
        case .upstream(let subscription):
            self.demand += demand
            subscription.request(demand)
        case .awaitingReplacement:
            self.demand += demand
        case .replacement(let subscription):
            subscription.request(demand)
        case .awaitingUpstream, .terminal:
            break
        }
    }

    func cancel() {
        switch state {
        case .upstream(let subscription), .replacement(let subscription):
            state = .terminal
            downstream = nil
            subscription.cancel()
        case .awaitingUpstream, .awaitingReplacement:
            state = .terminal
            downstream = nil
        case .terminal:
            break
        }
    }

    private func upstreamReceive(subscription: any Subscription) {
        guard case .awaitingUpstream = state, let downstream else {
            subscription.cancel()
            return
        }
        state = .upstream(subscription)
        downstream.receive(subscription: self)
    }

    private func upstreamReceive(_ input: Upstream.Output) -> Subscribers.Demand {
        guard case .upstream = state, let downstream else { return .none }
        demand -= 1
        let more = downstream.receive(input)
        if more > 0 { demand += more }
        return more
    }

    private func upstreamReceive(completion: Subscribers.Completion<Upstream.Failure>) {
        guard case .upstream = state else { return }
        switch completion {
        case .finished:
            state = .terminal
            downstream.take()?.receive(completion: .finished)
        case .failure(let error):
            state = .awaitingReplacement
            switch handler(error) {
            case .success(let replacement):
                replacement.receive(subscriber: Caught(inner: self))
            case .failure(let thrown):
                state = .terminal
                downstream.take()?.receive(completion: .failure(thrown))
            }
        }
    }

    private func replacementReceive(subscription: any Subscription) {
        guard case .awaitingReplacement = state else {
            subscription.cancel()
            return
        }
        state = .replacement(subscription)
        if demand > 0 { subscription.request(demand) }
    }

    private func replacementReceive(_ input: NewPublisher.Output) -> Subscribers.Demand {
        guard case .replacement = state, let downstream else { return .none }
        return downstream.receive(input)
    }

    private func replacementReceive(completion: Subscribers.Completion<NewPublisher.Failure>) {
        guard case .replacement = state else { return }
        state = .terminal
        switch completion {
        case .finished: downstream.take()?.receive(completion: .finished)
        case .failure(let error): downstream.take()?.receive(completion: .failure(convert(error)))
        }
    }

    /// The subscriber attached to the upstream.
    struct Uncaught: Subscriber {
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure
        let inner: CatchInner
        var combineIdentifier: CombineIdentifier { inner.combineIdentifier }
        func receive(subscription: any Subscription) { inner.upstreamReceive(subscription: subscription) }
        func receive(_ input: Input) -> Subscribers.Demand { inner.upstreamReceive(input) }
        func receive(completion: Subscribers.Completion<Failure>) { inner.upstreamReceive(completion: completion) }
    }

    /// The subscriber attached to the replacement publisher.
    struct Caught: Subscriber {
        typealias Input = NewPublisher.Output
        typealias Failure = NewPublisher.Failure
        let inner: CatchInner
        var combineIdentifier: CombineIdentifier { inner.combineIdentifier }
        func receive(subscription: any Subscription) { inner.replacementReceive(subscription: subscription) }
        func receive(_ input: Input) -> Subscribers.Demand { inner.replacementReceive(input) }
        func receive(completion: Subscribers.Completion<Failure>) { inner.replacementReceive(completion: completion) }
    }
}
