/// A communication device that wakes the signals associated with it, as the "Trigger" of
/// *Declarative Reactive Programming with Combine*.
///
/// A ``Signal`` is a publisher of `Void` that never fails; it is bound to a key (any `Hashable`
/// value, stored as `AnyHashable`) when it is made with ``signal(activatedBy:)``. Calling
/// ``activate(for:)`` with an equal key emits one `Void` value to every live subscriber of
/// every signal bound to that key, provided that subscriber has outstanding demand: like a
/// `PassthroughSubject` per key, a subscriber without demand misses the activation, and a
/// subscriber that attaches after an activation does not see it. A signal never completes.
///
/// Keys are compared with `AnyHashable` equality, so the hub can name triggers with its own
/// `Hashable` values. The unkeyed ``signal()`` and ``activate()`` use one private default key.
/// Activations are dispatched by a table of keys, one subject per key in use, so an
/// activation costs the same however many other keys have subscribers; ``activations``
/// sees every activation with its key (the hub's `trigger(name)` without a key).
///
/// A trigger is confined to one thread (the hub's event loop), as all HubEngine objects are.
/// Activating a key from inside a signal subscriber's `receive(_:)` is delivered at once
/// (recursively), as a subject send from inside `receive(_:)` is in Combine.
public final class Trigger {
    /// The publisher a trigger wakes: `Void` values, never fails, never completes.
    public struct Signal: Publisher {
        public typealias Output = Void
        public typealias Failure = Never

        /// The trigger this signal listens to.
        public let trigger: Trigger
        /// The key this signal is bound to.
        public let key: AnyHashable

        /// A signal of `trigger` bound to `key`. Same as `trigger.signal(activatedBy: key)`.
        public init(trigger: Trigger, key: AnyHashable) {
            self.trigger = trigger
            self.key = key
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Void, S.Failure == Never {
            trigger.subject(for: key).receive(subscriber: subscriber)
        }
    }

    /// The key used by the unkeyed ``signal()`` and ``activate()``.
    private struct DefaultKey: Hashable {}

    /// One subject per key that has (or recently had) subscribers.
    private var subjects: [AnyHashable: PassthroughSubject<Void, Never>] = [:]
    /// Every activation's key (`nil` for the unkeyed ``activate()``).
    private let every = PassthroughSubject<AnyHashable?, Never>()
    /// The number of keys above which keys without subscribers are pruned on the next subscribe.
    private var pruneThreshold = 16

    /// A trigger with no signals.
    public init() {}

    /// A signal that emits each time ``activate(for:)`` is called with a key equal to `key`.
    public func signal(activatedBy key: some Hashable) -> Signal {
        Signal(trigger: self, key: AnyHashable(key))
    }

    /// The signal of the unkeyed ``activate()``.
    public func signal() -> Signal {
        signal(activatedBy: DefaultKey())
    }

    /// Emits one `Void` value to each subscriber with demand of the signals bound to `key`,
    /// and `key` to each subscriber with demand of ``activations``.
    public func activate(for key: some Hashable) {
        send(AnyHashable(key), reported: AnyHashable(key))
    }

    /// Activates the signals made with the unkeyed ``signal()``.
    public func activate() {
        send(AnyHashable(DefaultKey()), reported: nil)
    }

    /// Every activation from now on, as its key (`nil` for the unkeyed ``activate()``),
    /// to subscribers with demand: a `PassthroughSubject` of keys. Never fails or completes.
    public var activations: AnyPublisher<AnyHashable?, Never> { every.eraseToAnyPublisher() }

    /// The number of live signal subscribers bound to `key`.
    public func subscriberCount(for key: some Hashable) -> Int {
        subjects[AnyHashable(key)]?.subscriberCount ?? 0
    }

    /// The number of live subscribers: of every key's signals and of ``activations``.
    public var subscriberCount: Int {
        subjects.values.reduce(every.subscriberCount) { $0 + $1.subscriberCount }
    }

    private func send(_ key: AnyHashable, reported: AnyHashable?) {
        if every.subscriberCount > 0 { every.send(reported) }
        guard let subject = subjects[key] else { return }
        if subject.subscriberCount == 0 {
            subjects[key] = nil
            return
        }
        subject.send(())
    }

    /// The number of keys in the table (for tests of the pruning).
    internal var keyCount: Int { subjects.count }

    /// The subject carrying `key`'s activations, made on first use. Keys left without
    /// subscribers are dropped when the table grows, so that the table stays as large as
    /// the set of keys in use.
    fileprivate func subject(for key: AnyHashable) -> PassthroughSubject<Void, Never> {
        if let subject = subjects[key] { return subject }
        if subjects.count >= pruneThreshold {
            subjects = subjects.filter { $0.value.subscriberCount > 0 }
            pruneThreshold = Swift.max(16, subjects.count * 2)
        }
        let subject = PassthroughSubject<Void, Never>()
        subjects[key] = subject
        return subject
    }
}
