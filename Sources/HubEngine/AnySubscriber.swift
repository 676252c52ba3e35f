/// A type-erased subscriber, as Combine's `AnySubscriber`.
///
/// It forwards through closures made where the wrapped subscriber's type is
/// known, so the wrapped subscriber's code runs specialised.
public struct AnySubscriber<Input, Failure: Error>: Subscriber, CustomStringConvertible {
    @usableFromInline internal let receiveSubscriptionBody: ((any Subscription) -> Void)?
    @usableFromInline internal let receiveValueBody: ((Input) -> Subscribers.Demand)?
    @usableFromInline internal let receiveCompletionBody: ((Subscribers.Completion<Failure>) -> Void)?

    /// The identity of the wrapped subscriber (or a fresh one for closure-built subscribers).
    public let combineIdentifier: CombineIdentifier

    /// Erases `subscriber`.
    @inlinable
    public init<S: Subscriber>(_ subscriber: S) where S.Input == Input, S.Failure == Failure {
        if let erased = subscriber as? AnySubscriber<Input, Failure> {
            self = erased
            return
        }
        combineIdentifier = subscriber.combineIdentifier
        receiveSubscriptionBody = { subscriber.receive(subscription: $0) }
        receiveValueBody = { subscriber.receive($0) }
        receiveCompletionBody = { subscriber.receive(completion: $0) }
    }

    /// A subscriber that forwards into `subject`: the subject receives the subscription
    /// (and requests from it), each value and the completion.
    public init<S: Subject>(_ subject: S) where S.Output == Input, S.Failure == Failure {
        combineIdentifier = CombineIdentifier()
        receiveSubscriptionBody = { subscription in
            subject.send(subscription: subscription)
        }
        receiveValueBody = { value in
            subject.send(value)
            return .none
        }
        receiveCompletionBody = { completion in subject.send(completion: completion) }
    }

    /// A subscriber made of closures; a missing closure ignores its event (and asks for no more values).
    public init(
        receiveSubscription: ((any Subscription) -> Void)? = nil,
        receiveValue: ((Input) -> Subscribers.Demand)? = nil,
        receiveCompletion: ((Subscribers.Completion<Failure>) -> Void)? = nil
    ) {
        combineIdentifier = CombineIdentifier()
        receiveSubscriptionBody = receiveSubscription
        receiveValueBody = receiveValue
        receiveCompletionBody = receiveCompletion
    }

    @inlinable
    public func receive(subscription: any Subscription) { receiveSubscriptionBody?(subscription) }
    @inlinable
    public func receive(_ input: Input) -> Subscribers.Demand { receiveValueBody?(input) ?? .none }
    @inlinable
    public func receive(completion: Subscribers.Completion<Failure>) { receiveCompletionBody?(completion) }

    public var description: String { "AnySubscriber" }
}
