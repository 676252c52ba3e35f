/// A publisher that fails at once with an error, as Combine's `Fail`.
public struct Fail<Output, Failure: Error>: Publisher {
    /// The error sent.
    public let error: Failure

    /// A publisher failing with `error`.
    public init(error: Failure) { self.error = error }

    /// A publisher failing with `error`, with an explicit output type.
    public init(outputType: Output.Type, failure: Failure) { self.error = failure }

    /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        subscriber.receive(subscription: Subscriptions.empty)
        subscriber.receive(completion: .failure(error))
    }
}

extension Fail: Equatable where Failure: Equatable {}
