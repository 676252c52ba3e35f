/// The per-subscriber link of a subject: its own demand, its own downstream.
///
/// Subjects keep their subscribers as conduits of this base class so that one
/// subject can serve subscribers of different concrete types; the generic
/// subclasses are what the compiler specialises.
internal class SubjectConduit<Output, Failure: Error>: Subscription {
    /// Offers a value; delivered only if the subscriber has demand.
    func offer(_ value: Output) { fatalError("abstract") }
    /// Delivers the subject's completion (no demand needed) and detaches.
    func finish(_ completion: Subscribers.Completion<Failure>) { fatalError("abstract") }
    func request(_ demand: Subscribers.Demand) { fatalError("abstract") }
    func cancel() { fatalError("abstract") }
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
