import HubEngine
import HubValue
import HubWire

/// Holds back the sources of a pipeline being restored until every operator has taken
/// its state: a source that delivered during the subscription (a store that reads
/// synchronously) would reach operators not yet restored, or an instance about to be
/// thrown away because a state could not be read.
///
/// ``gated(_:)`` makes a publisher that subscribes to what `make` returns only once the
/// gate is ``open()``: its subscriber gets its subscription then. Confined to the loop.
final class SourceGate {
    private var isOpen = false
    private var waiting: [() -> Void] = []

    /// A publisher whose subscriptions wait for the gate; each makes its source with `make`.
    func gated(_ make: @escaping () -> AnyPublisher<Value, HubError>) -> AnyPublisher<Value, HubError> {
        Deferred { [self] () -> AnyPublisher<Value, HubError> in
            guard !isOpen else { return make() }
            let held = Held(make: make)
            waiting.append { held.release() }
            return held.eraseToAnyPublisher()
        }.eraseToAnyPublisher()
    }

    /// Lets every source subscribed so far (and later) through, in the order they were subscribed.
    func open() {
        guard !isOpen else { return }
        isOpen = true
        let released = waiting
        waiting = []
        for release in released { release() }
    }

    /// One subscription held at the gate: its subscriber attaches to the source on release.
    private final class Held: Publisher {
        typealias Output = Value
        typealias Failure = HubError

        private let make: () -> AnyPublisher<Value, HubError>
        private var subscriber: AnySubscriber<Value, HubError>?
        private var released = false

        init(make: @escaping () -> AnyPublisher<Value, HubError>) {
            self.make = make
        }

        func receive<S: Subscriber>(subscriber: S) where S.Input == Value, S.Failure == HubError {
            if released {
                make().receive(subscriber: subscriber)
            } else {
                self.subscriber = AnySubscriber(subscriber)
            }
        }

        func release() {
            released = true
            guard let subscriber = subscriber.take() else { return }
            make().receive(subscriber: subscriber)
        }
    }
}
