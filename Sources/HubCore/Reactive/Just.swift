/// A publisher that emits one value, then finishes, as Combine's `Just`.
public struct Just<Output>: Publisher {
    public typealias Failure = Never

    /// The value emitted.
    public let output: Output

    /// A publisher of `output`.
    public init(_ output: Output) { self.output = output }

    /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
        subscriber.receive(subscription: Inner(value: output, downstream: subscriber))
    }

    private final class Inner<Downstream: Subscriber>: Subscription where Downstream.Input == Output, Downstream.Failure == Never {
        private var value: Output?
        private var downstream: Downstream?

        init(value: Output, downstream: Downstream) {
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
}

extension Just: Equatable where Output: Equatable {}
