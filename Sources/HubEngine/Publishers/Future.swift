/// A publisher that eventually produces one value and finishes, or fails, as Combine's `Future`.
///
/// The closure given to ``init(_:)`` runs once, at creation, and receives a promise. The
/// first call of the promise settles the future; later calls are ignored. Every subscriber,
/// whenever it attaches, receives the same result: a value (followed by `finished`) once it
/// has requested anything, or a failure at once, without demand. Confined to one thread
/// like the rest of the engine.
public final class Future<Output, Failure: Error>: Publisher {
    /// Settles the future with a value or an error.
    public typealias Promise = (Result<Output, Failure>) -> Void

    private var result: Result<Output, Failure>?
    private var conduits: [Conduit] = []

    /// A future settled by `attemptToFulfill`, which is called at once with the promise.
    public init(_ attemptToFulfill: @escaping (@escaping Promise) -> Void) {
        attemptToFulfill(self.promise)
    }

    /// Whether the promise has been called.
    public var isSettled: Bool { result != nil }

    private func promise(_ result: Result<Output, Failure>) {
        guard self.result == nil else { return }
        self.result = result
        let current = conduits
        for conduit in current { conduit.settle(result) }
    }

    /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        let conduit = Link(parent: self, downstream: subscriber)
        conduits.append(conduit)
        subscriber.receive(subscription: conduit)
        if let result { conduit.settle(result) }
    }

    private func remove(_ conduit: Conduit) {
        if let index = conduits.firstIndex(where: { $0 === conduit }) {
            conduits.remove(at: index)
        }
    }

    private var settledResult: Result<Output, Failure>? { result }

    /// The type-erased base of a subscriber's link to the future.
    private class Conduit: Subscription {
        /// Delivers the result if it can (a value needs demand, a failure does not).
        func settle(_ result: Result<Output, Failure>) { fatalError("abstract") }
        func request(_ demand: Subscribers.Demand) { fatalError("abstract") }
        func cancel() { fatalError("abstract") }
    }

    private final class Link<Downstream: Subscriber>: Conduit
    where Downstream.Input == Output, Downstream.Failure == Failure {
        private var parent: Future?
        private var downstream: Downstream?
        private var hasDemand = false

        init(parent: Future, downstream: Downstream) {
            self.parent = parent
            self.downstream = downstream
        }

        override func settle(_ result: Result<Output, Failure>) {
            guard downstream != nil else { return }
            if case .success = result, !hasDemand { return }
            deliver(result)
        }

        override func request(_ demand: Subscribers.Demand) {
            guard demand > 0, downstream != nil else { return }
            hasDemand = true
            if let result = parent?.settledResult { deliver(result) }
        }

        override func cancel() {
            guard downstream.take() != nil else { return }
            parent.take()?.remove(self)
        }

        private func deliver(_ result: Result<Output, Failure>) {
            guard let downstream = downstream.take() else { return }
            parent.take()?.remove(self)
            switch result {
            case .success(let value):
                _ = downstream.receive(value)
                downstream.receive(completion: .finished)
            case .failure(let error):
                downstream.receive(completion: .failure(error))
            }
        }
    }
}
