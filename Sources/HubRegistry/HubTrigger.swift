import HubEngine
import HubValue
import HubWire

/// A named trigger of the hub: the engine's keyed ``Trigger`` under a name, with the
/// hub's values as keys. Each activation, with an optional key, reaches the
/// `trigger(name)` subscribers (all activations) and the `trigger(name, key)`
/// subscribers (activations with an equal key, found by the trigger's key table).
/// Subscribers receive the key, or `null` for an activation without one.
public final class HubTrigger {
    /// The trigger's name.
    public let name: String
    /// The engine trigger, keyed by `Value` (`null` for an activation without a key).
    public let trigger = Trigger()

    /// Its counters for the metrics (the hub's bounded table hands them out).
    public internal(set) var counters: NameCounters
    /// Whether the configuration declared it (else it was created on first use, and is
    /// forgotten once idle: ``Hub/sweepIdleNames()``).
    public internal(set) var isDeclared = false
    /// Whether it was activated or subscribed since the last sweep of idle names.
    var wasUsed = false

    /// A trigger named `name`.
    public init(name: String) {
        self.name = name
        counters = NameCounters(name: name)
    }

    /// The number of live subscribers.
    public var subscriberCount: Int { trigger.subscriberCount }

    /// Activates the trigger, for `key` if given.
    public func activate(key: Value?) {
        trigger.activate(for: key ?? .null)
    }

    /// The activations, all of them or only those whose key equals `key`, unbuffered.
    public func publisher(key: Value?) -> AnyPublisher<Value, HubError> {
        guard let key else {
            return trigger.activations
                .map { ($0?.base as? Value) ?? .null }
                .setFailureType(to: HubError.self)
                .eraseToAnyPublisher()
        }
        return trigger.signal(activatedBy: key)
            .map { key }
            .setFailureType(to: HubError.self)
            .eraseToAnyPublisher()
    }
}
