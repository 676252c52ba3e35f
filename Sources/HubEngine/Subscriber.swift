/// A receiver of values from a publisher, as Combine's `Subscriber`.
///
/// The publisher calls ``receive(subscription:)`` once, then ``receive(_:)``
/// at most as many times as the subscriber has asked for, then at most one
/// ``receive(completion:)``.
public protocol Subscriber<Input, Failure>: CustomCombineIdentifierConvertible {
    /// The values this subscriber receives.
    associatedtype Input
    /// The error this subscriber can receive.
    associatedtype Failure: Error

    /// The publisher acknowledges the subscription; the subscriber may request values with it.
    func receive(subscription: any Subscription)

    /// Delivers one value; returns how many more values the subscriber wants (added to its demand).
    func receive(_ input: Input) -> Subscribers.Demand

    /// The publisher finished, normally or with an error. Nothing follows.
    func receive(completion: Subscribers.Completion<Failure>)
}

extension Subscriber where Input == Void {
    /// Delivers the empty value.
    public func receive() -> Subscribers.Demand { receive(()) }
}
