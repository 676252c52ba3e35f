/// A type-erased publisher, as Combine's `AnyPublisher`.
///
/// Erasure is done with a closure made where the wrapped publisher's type is
/// known, and subscribers cross it as ``AnySubscriber``s, so the code on both
/// sides of the erasure stays specialised (the hub's pipelines are chains of
/// erased stages).
public struct AnyPublisher<Output, Failure: Error>: Publisher, CustomStringConvertible {
    @usableFromInline
    internal let subscribeBody: (AnySubscriber<Output, Failure>) -> Void

    /// Erases `publisher`.
    @inlinable
    public init<P: Publisher>(_ publisher: P) where P.Output == Output, P.Failure == Failure {
        if let erased = publisher as? AnyPublisher<Output, Failure> {
            subscribeBody = erased.subscribeBody
        } else {
            subscribeBody = { publisher.receive(subscriber: $0) }
        }
    }

    /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
    @inlinable
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        subscribeBody(AnySubscriber(subscriber))
    }

    public var description: String { "AnyPublisher" }
}

extension Publisher {
    /// Wraps this publisher in an ``AnyPublisher``.
    @inlinable
    public func eraseToAnyPublisher() -> AnyPublisher<Output, Failure> { AnyPublisher(self) }
}
