/// The per-subscriber link of a subject: its own demand, its own downstream.
///
/// A conduit is not generic over its subscriber: it calls the subscriber
/// through closures made where the subscriber's type is known (in the
/// subject's inlinable `receive(subscriber:)`), so the value path is
/// specialised for the concrete chain even though a subject serves
/// subscribers of many types. `currentValue` lets ``CurrentValueSubject``
/// deliver its current value on the first demand.
///
/// Delivery costs no reference counting: the closures live in an immutable
/// ``Downstream`` box that the conduit owns (`owner`) and calls through an
/// unretained reference (`target`). A subscriber that cancels, or a subject that
/// finishes, while one of this conduit's deliveries is running clears `target`
/// at once (nothing more is delivered) but releases the box only when the
/// outermost delivery has returned, so the running closure is never freed under it.
///
/// Like every engine object a conduit is confined to one thread, and no access
/// to its stored properties spans a call out, so their dynamic exclusivity
/// checks are switched off (they cost more than the delivery itself).
@usableFromInline
internal final class SubjectConduit<Output, Failure: Error>: Subscription {
    /// The subscriber's entry points, made where its type is known.
    @usableFromInline
    internal final class Downstream {
        @usableFromInline internal let receiveValue: (Output) -> Subscribers.Demand
        @usableFromInline internal let receiveCompletion: (Subscribers.Completion<Failure>) -> Void

        @inlinable
        internal init<S: Subscriber>(_ subscriber: S) where S.Input == Output, S.Failure == Failure {
            receiveValue = { subscriber.receive($0) }
            receiveCompletion = { subscriber.receive(completion: $0) }
        }
    }

    /// Keeps the downstream box alive; cleared once no delivery of this conduit is running.
    @exclusivity(unchecked) @usableFromInline internal var owner: Downstream?
    /// The box as delivery calls it, or `nil` once cancelled or finished.
    @exclusivity(unchecked) @usableFromInline internal var target: Unmanaged<Downstream>?
    /// How many deliveries of this conduit are running (more than one when a subscriber re-enters the subject).
    @exclusivity(unchecked) @usableFromInline internal var delivering = 0
    @exclusivity(unchecked) @usableFromInline internal var demand = Subscribers.Demand.none
    /// Called by the subject's ``Subject`` to forget a cancelled conduit.
    @exclusivity(unchecked) @usableFromInline internal var detach: ((SubjectConduit) -> Void)?
    /// The subject's current value (CurrentValueSubject only).
    @exclusivity(unchecked) @usableFromInline internal var currentValue: (() -> Output)?
    /// Whether the subscriber has the current value (CurrentValueSubject only).
    @exclusivity(unchecked) @usableFromInline internal var deliveredCurrent = false

    @inlinable
    internal init<S: Subscriber>(
        _ subscriber: S, currentValue: (() -> Output)? = nil, detach: @escaping (SubjectConduit) -> Void
    ) where S.Input == Output, S.Failure == Failure {
        let downstream = Downstream(subscriber)
        owner = downstream
        target = Unmanaged.passUnretained(downstream)
        self.currentValue = currentValue
        self.detach = detach
    }

    /// Whether the subscriber is still attached.
    @inlinable
    internal var isLive: Bool { target != nil }

    /// Delivers `value` if the subscriber has demand; returns whether it was delivered.
    @inlinable @discardableResult
    internal func offer(_ value: Output) -> Bool {
        guard demand > 0, let target else { return false }
        demand -= 1
        deliveredCurrent = true
        delivering += 1
        let more = target._withUnsafeGuaranteedRef { $0.receiveValue(value) }
        delivering -= 1
        if self.target == nil {
            releaseIfIdle()
        } else if more > 0 {
            demand += more
        }
        return true
    }

    /// Drops the downstream box unless a delivery is still running (that delivery drops it).
    @inlinable
    internal func releaseIfIdle() {
        if delivering == 0 { owner = nil }
    }

    /// Delivers the subject's completion (no demand needed) and detaches.
    @inlinable
    internal func finish(_ completion: Subscribers.Completion<Failure>) {
        guard target != nil, let downstream = owner else { return }
        target = nil
        detach = nil
        currentValue = nil
        releaseIfIdle()
        downstream.receiveCompletion(completion)
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
        guard target != nil else { return }
        target = nil
        currentValue = nil
        releaseIfIdle()
        detach.take()?(self)
    }
}
