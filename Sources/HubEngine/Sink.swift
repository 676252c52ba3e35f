extension Subscribers {
    /// A subscriber that requests unlimited values and hands each event to a closure, as Combine's `Sink`.
    public final class Sink<Input, Failure: Error>: Subscriber, Cancellable {
        /// Called with each value.
        public let receiveValue: (Input) -> Void
        /// Called with the completion.
        public let receiveCompletion: (Subscribers.Completion<Failure>) -> Void
        @exclusivity(unchecked) @usableFromInline internal var subscription: (any Subscription)?
        @exclusivity(unchecked) @usableFromInline internal var finished = false

        /// A sink calling `receiveCompletion` and `receiveValue`.
        @inlinable
        public init(
            receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
            receiveValue: @escaping (Input) -> Void
        ) {
            self.receiveCompletion = receiveCompletion
            self.receiveValue = receiveValue
        }

        @inlinable
        public func receive(subscription: any Subscription) {
            guard self.subscription == nil, !finished else {
                subscription.cancel()
                return
            }
            self.subscription = subscription
            subscription.request(.unlimited)
        }

        @inlinable
        public func receive(_ input: Input) -> Subscribers.Demand {
            guard !finished else { return .none }
            receiveValue(input)
            return .none
        }

        public func receive(completion: Subscribers.Completion<Failure>) {
            guard !finished else { return }
            finished = true
            subscription = nil
            receiveCompletion(completion)
        }

        /// Cancels the upstream subscription; idempotent.
        public func cancel() {
            finished = true
            subscription.take()?.cancel()
        }
    }
}

extension Publisher {
    /// Subscribes with a ``Subscribers/Sink`` requesting unlimited values.
    /// Keep the returned cancellable for as long as values should flow.
    @inlinable
    public func sink(
        receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
        receiveValue: @escaping (Output) -> Void
    ) -> AnyCancellable {
        let sink = Subscribers.Sink<Output, Failure>(receiveCompletion: receiveCompletion, receiveValue: receiveValue)
        subscribe(sink)
        return AnyCancellable(sink)
    }
}

extension Publisher where Failure == Never {
    /// Subscribes with a ``Subscribers/Sink`` that only takes values.
    @inlinable
    public func sink(receiveValue: @escaping (Output) -> Void) -> AnyCancellable {
        sink(receiveCompletion: { _ in }, receiveValue: receiveValue)
    }
}
