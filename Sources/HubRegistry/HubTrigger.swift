import HubEngine
import HubValue
import HubWire

/// A named trigger of the hub: each activation, with an optional key, reaches
/// the `trigger(name)` subscribers (all activations) and the `trigger(name, key)`
/// subscribers (activations with an equal key). Subscribers receive the key, or
/// `null` for an activation without one.
public final class HubTrigger {
    /// The trigger's name.
    public let name: String
    private let activations = PassthroughSubject<Value, HubError>()

    /// A trigger named `name`.
    public init(name: String) { self.name = name }

    /// The number of live subscribers.
    public var subscriberCount: Int { activations.subscriberCount }

    /// Activates the trigger, for `key` if given.
    public func activate(key: Value?) {
        activations.send(key ?? .null)
    }

    /// The activations, all of them or only those whose key equals `key`, unbuffered.
    public func publisher(key: Value?) -> AnyPublisher<Value, HubError> {
        guard let key else { return activations.eraseToAnyPublisher() }
        return activations.filter { $0 == key }.eraseToAnyPublisher()
    }
}
