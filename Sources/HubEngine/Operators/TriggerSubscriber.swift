/// An operator that watches a second publisher (the trigger) for its first value,
/// as `drop(untilOutputFrom:)` and `prefix(untilOutputFrom:)` do.
internal protocol TriggerOwner: AnyObject {
    associatedtype TriggerFailure: Error
    /// Whether the owner still listens to its trigger (a late subscription is cancelled otherwise).
    var wantsTrigger: Bool { get }
    /// The trigger emitted its first value (its subscription is already cancelled).
    func triggerFired()
    /// The trigger completed before emitting.
    func triggerCompleted(_ completion: Subscribers.Completion<TriggerFailure>)
}

/// Subscribes to a trigger on behalf of a ``TriggerOwner``: asks it for `.max(1)`,
/// reports its first value or its completion once, and then lets go of the owner.
internal final class TriggerSubscriber<Input, Owner: TriggerOwner>: Subscriber, Cancellable {
    typealias Failure = Owner.TriggerFailure

    private var owner: Owner?
    private var subscription: (any Subscription)?

    init(owner: Owner) {
        self.owner = owner
    }

    func receive(subscription: any Subscription) {
        guard let owner, owner.wantsTrigger, self.subscription == nil else {
            subscription.cancel()
            return
        }
        self.subscription = subscription
        subscription.request(.max(1))
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        guard let owner = owner.take() else { return .none }
        subscription.take()?.cancel()
        owner.triggerFired()
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        guard let owner = owner.take() else { return }
        subscription = nil
        owner.triggerCompleted(completion)
    }

    /// Stops listening: cancels the trigger's subscription and lets go of the owner.
    func cancel() {
        owner = nil
        subscription.take()?.cancel()
    }
}
