extension Publishers {
    /// Drops a value when a throwing predicate calls it a duplicate of the previous upstream value,
    /// as Combine's `Publishers.TryRemoveDuplicates`.
    ///
    /// A dropped value gives back a demand of one. When the predicate throws, the
    /// upstream is cancelled and the downstream fails with the thrown error.
    public struct TryRemoveDuplicates<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher whose duplicates are removed.
        public let upstream: Upstream
        /// Returns true when the second value duplicates the first; an error ends the stream.
        public let predicate: (Output, Output) throws -> Bool

        /// Removes from `upstream` the values that `predicate` finds equal to their predecessor.
        public init(upstream: Upstream, predicate: @escaping (Output, Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        /// Attaches `subscriber`; each subscription remembers its own previous value.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            var last: Output?
            upstream.receive(subscriber: ValueFilterSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, mapFailure: { $0 }
            ) { input in
                defer { last = input }
                guard let previous = last else { return .emit(input) }
                do { return try predicate(previous, input) ? .skip : .emit(input) } catch { return .fail(error) }
            })
        }
    }
}

extension Publisher {
    /// Drops each value that `predicate(previous, value)` calls a duplicate; a thrown error fails downstream.
    public func tryRemoveDuplicates(by predicate: @escaping (Output, Output) throws -> Bool) -> Publishers.TryRemoveDuplicates<Self> {
        Publishers.TryRemoveDuplicates(upstream: self, predicate: predicate)
    }
}
