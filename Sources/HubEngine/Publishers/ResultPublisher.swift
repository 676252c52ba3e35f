extension Result {
    /// A publisher of a result, as Combine's `Result.Publisher`: a success is published once the
    /// subscriber asks, then `finished`; a failure is sent at once, without demand.
    public struct Publisher: HubEngine.Publisher {
        public typealias Output = Success

        /// The result published.
        public let result: Result<Success, Failure>

        /// A publisher of `result`.
        public init(_ result: Result<Success, Failure>) { self.result = result }

        /// A publisher of a success.
        public init(_ output: Success) { self.init(.success(output)) }

        /// A publisher of a failure.
        public init(_ failure: Failure) { self.init(.failure(failure)) }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Success, S.Failure == Failure {
            switch result {
            case .success(let value):
                subscriber.receive(subscription: OnceValueSubscription<S>(value: value, downstream: subscriber))
            case .failure(let error):
                subscriber.receive(subscription: Subscriptions.empty)
                subscriber.receive(completion: .failure(error))
            }
        }
    }

    /// A publisher of this result.
    public var publisher: Publisher { Publisher(self) }
}

extension Result.Publisher: Equatable where Success: Equatable, Failure: Equatable {}
