extension Optional {
    /// A publisher of an optional's value, as Combine's `Optional.Publisher`: a present value is
    /// published once the subscriber asks, then `finished`; `nil` finishes at once.
    public struct Publisher: HubEngine.Publisher {
        public typealias Output = Wrapped
        public typealias Failure = Never

        /// The value published, if any.
        public let output: Wrapped?

        /// A publisher of `output`.
        public init(_ output: Wrapped?) { self.output = output }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Wrapped, S.Failure == Never {
            guard let output else {
                subscriber.receive(subscription: Subscriptions.empty)
                subscriber.receive(completion: .finished)
                return
            }
            subscriber.receive(subscription: OnceValueSubscription<S>(value: output, downstream: subscriber))
        }
    }

    /// A publisher of this optional's value (nothing for `nil`), then `finished`.
    public var publisher: Publisher { Publisher(self) }
}

extension Optional.Publisher: Equatable where Wrapped: Equatable {}
