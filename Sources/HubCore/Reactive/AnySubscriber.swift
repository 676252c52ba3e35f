/// A type-erased subscriber, as Combine's `AnySubscriber`.
public struct AnySubscriber<Input, Failure: Error>: Subscriber, CustomStringConvertible {
    private let receiveSubscriptionBody: ((any Subscription) -> Void)?
    private let receiveValueBody: ((Input) -> Subscribers.Demand)?
    private let receiveCompletionBody: ((Subscribers.Completion<Failure>) -> Void)?

    /// The identity of the wrapped subscriber (or a fresh one for closure-built subscribers).
    public let combineIdentifier: CombineIdentifier

    /// Erases `subscriber`.
    public init<S: Subscriber>(_ subscriber: S) where S.Input == Input, S.Failure == Failure {
        if let erased = subscriber as? AnySubscriber<Input, Failure> {
            self = erased
            return
        }
        combineIdentifier = subscriber.combineIdentifier
        receiveSubscriptionBody = subscriber.receive(subscription:)
        receiveValueBody = subscriber.receive(_:)
        receiveCompletionBody = subscriber.receive(completion:)
    }

    /// A subscriber that forwards into `subject`: it requests unlimited values and sends each one.
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

    public func receive(subscription: any Subscription) { receiveSubscriptionBody?(subscription) }
    public func receive(_ input: Input) -> Subscribers.Demand { receiveValueBody?(input) ?? .none }
    public func receive(completion: Subscribers.Completion<Failure>) { receiveCompletionBody?(completion) }

    public var description: String { "AnySubscriber" }
}
