/// The per-subscriber link of a subject: its own demand, its own downstream.
///
/// A conduit is not generic over its subscriber: it calls the subscriber
/// through closures made where the subscriber's type is known (in the
/// subject's inlinable `receive(subscriber:)`), so the value path is
/// specialised for the concrete chain even though a subject serves
/// subscribers of many types. The subject is `parent`; `onFirstDemand` lets
/// ``CurrentValueSubject`` deliver its current value.
@usableFromInline
internal final class SubjectConduit<Output, Failure: Error>: Subscription {
    @usableFromInline internal var receiveValue: ((Output) -> Subscribers.Demand)?
    @usableFromInline internal var receiveCompletion: ((Subscribers.Completion<Failure>) -> Void)?
    @usableFromInline internal var demand = Subscribers.Demand.none
    /// Called by the subject's ``Subject`` to forget a cancelled conduit.
    @usableFromInline internal var detach: ((SubjectConduit) -> Void)?
    /// The subject's current value (CurrentValueSubject only).
    @usableFromInline internal var currentValue: (() -> Output)?
    /// Whether the subscriber has the current value (CurrentValueSubject only).
    @usableFromInline internal var deliveredCurrent = false

    @inlinable
    internal init<S: Subscriber>(
        _ subscriber: S, currentValue: (() -> Output)? = nil, detach: @escaping (SubjectConduit) -> Void
    ) where S.Input == Output, S.Failure == Failure {
        receiveValue = { subscriber.receive($0) }
        receiveCompletion = { subscriber.receive(completion: $0) }
        self.currentValue = currentValue
        self.detach = detach
    }

    /// Whether the subscriber is still attached.
    @inlinable
    internal var isLive: Bool { receiveValue != nil }

    /// Delivers `value` if the subscriber has demand; returns whether it was delivered.
    @inlinable @discardableResult
    internal func offer(_ value: Output) -> Bool {
        guard demand > 0, let receiveValue else { return false }
        demand -= 1
        deliveredCurrent = true
        let more = receiveValue(value)
        if more > 0 { demand += more }
        return true
    }

    /// Delivers the subject's completion (no demand needed) and detaches.
    @inlinable
    internal func finish(_ completion: Subscribers.Completion<Failure>) {
        guard let receiveCompletion = receiveCompletion.take() else { return }
        receiveValue = nil
        detach = nil
        currentValue = nil
        receiveCompletion(completion)
    }

    @usableFromInline
    internal func request(_ demand: Subscribers.Demand) {
        guard isLive, demand > 0 else { return }
        self.demand += demand
        if !deliveredCurrent, let currentValue {
            offer(currentValue())
        }
    }

    @usableFromInline
    internal func cancel() {
        guard receiveValue != nil else { return }
        receiveValue = nil
        receiveCompletion = nil
        currentValue = nil
        detach.take()?(self)
    }
}

extension Optional {
    /// Returns the wrapped value and sets `self` to `nil`.
    @inlinable
    internal mutating func take() -> Wrapped? {
        let value = self
        self = nil
        return value
    }
}
