extension Subscribers {
    /// A subscriber that writes each value to a property of an object, as Combine's `Assign`.
    public final class Assign<Root, Input>: Subscriber, Cancellable {
        public typealias Failure = Never

        /// The object written to; released on completion or cancellation.
        public private(set) var object: Root?
        /// The property written to.
        public let keyPath: ReferenceWritableKeyPath<Root, Input>
        private var subscription: (any Subscription)?
        private var finished = false

        /// A subscriber assigning each value to `object[keyPath: keyPath]`.
        public init(object: Root, keyPath: ReferenceWritableKeyPath<Root, Input>) {
            self.object = object
            self.keyPath = keyPath
        }

        public func receive(subscription: any Subscription) {
            guard self.subscription == nil, !finished else {
                subscription.cancel()
                return
            }
            self.subscription = subscription
            subscription.request(.unlimited)
        }

        public func receive(_ input: Input) -> Subscribers.Demand {
            object?[keyPath: keyPath] = input
            return .none
        }

        public func receive(completion: Subscribers.Completion<Never>) {
            finished = true
            subscription = nil
            object = nil
        }

        /// Cancels the upstream subscription and releases the object; idempotent.
        public func cancel() {
            finished = true
            subscription.take()?.cancel()
            object = nil
        }
    }
}

extension Publisher where Failure == Never {
    /// Assigns each value to `object[keyPath: keyPath]`.
    public func assign<Root>(to keyPath: ReferenceWritableKeyPath<Root, Output>, on object: Root) -> AnyCancellable {
        let subscriber = Subscribers.Assign(object: object, keyPath: keyPath)
        subscribe(subscriber)
        return AnyCancellable(subscriber)
    }
}
