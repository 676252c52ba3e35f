/// A source of values over time, as Combine's `Publisher`.
///
/// `receive(subscriber:)` attaches a subscriber; the publisher then calls the
/// subscriber's `receive(subscription:)` and honours the demand it requests.
public protocol Publisher<Output, Failure> {
    /// The values this publisher produces.
    associatedtype Output
    /// The error this publisher can fail with (`Never` if it cannot).
    associatedtype Failure: Error

    /// Attaches `subscriber`. Call ``subscribe(_:)`` instead, as in Combine.
    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure
}

extension Publisher {
    /// Attaches `subscriber` to this publisher.
    @inlinable
    public func subscribe<S: Subscriber>(_ subscriber: S) where S.Input == Output, S.Failure == Failure {
        receive(subscriber: subscriber)
    }

    /// Attaches a subject: the subject receives this publisher's values and completion.
    /// Returns a cancellable that ends the forwarding.
    public func subscribe<S: Subject>(_ subject: S) -> AnyCancellable where S.Output == Output, S.Failure == Failure {
        let subscriber = SubjectSubscriber(subject)
        receive(subscriber: subscriber)
        return AnyCancellable(subscriber)
    }
}
