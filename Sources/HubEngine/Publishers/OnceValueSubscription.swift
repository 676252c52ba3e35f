/// The subscription of `Just`, `Optional.Publisher` and a successful `Result.Publisher`: one
/// value on the first non-zero request, then `finished`; after `cancel()` nothing.
internal final class OnceValueSubscription<Downstream: Subscriber>: Subscription {
    private var value: Downstream.Input?
    private var downstream: Downstream?

    init(value: Downstream.Input, downstream: Downstream) {
        self.value = value
        self.downstream = downstream
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, let downstream = downstream.take(), let value = value.take() else { return }
        _ = downstream.receive(value)
        downstream.receive(completion: .finished)
    }

    func cancel() {
        downstream = nil
        value = nil
    }
}
