/// A type-erased publisher, as Combine's `AnyPublisher`.
public struct AnyPublisher<Output, Failure: Error>: Publisher, CustomStringConvertible {
    @usableFromInline
    internal let box: PublisherBoxBase<Output, Failure>

    /// Erases `publisher`.
    @inlinable
    public init<P: Publisher>(_ publisher: P) where P.Output == Output, P.Failure == Failure {
        if let erased = publisher as? AnyPublisher<Output, Failure> {
            box = erased.box
        } else {
            box = PublisherBox(publisher)
        }
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        box.receive(subscriber: subscriber)
    }

    public var description: String { "AnyPublisher" }
}

@usableFromInline
internal class PublisherBoxBase<Output, Failure: Error> {
    @inlinable init() {}
    @usableFromInline
    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        fatalError("abstract")
    }
}

@usableFromInline
internal final class PublisherBox<P: Publisher>: PublisherBoxBase<P.Output, P.Failure> {
    @usableFromInline let base: P
    @inlinable init(_ base: P) { self.base = base }
    @inlinable
    override func receive<S: Subscriber>(subscriber: S) where S.Input == P.Output, S.Failure == P.Failure {
        base.receive(subscriber: subscriber)
    }
}

extension Publisher {
    /// Wraps this publisher in an ``AnyPublisher``.
    @inlinable
    public func eraseToAnyPublisher() -> AnyPublisher<Output, Failure> { AnyPublisher(self) }
}
