import HubValue

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

        /// Where the previous upstream value is checkpointed, if it is.
        public let state: OperatorState<Output>?

        /// Removes from `upstream` the values that `predicate` finds equal to their
        /// predecessor, the previous value checkpointed in `state` if given.
        public init(upstream: Upstream, predicate: @escaping (Output, Output) throws -> Bool, state: OperatorState<Output>? = nil) {
            self.upstream = upstream
            self.predicate = predicate
            self.state = state
        }

        /// Attaches `subscriber`; each subscription remembers its own previous value.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let predicate = self.predicate
            let box = StateBox<Output?>(nil)
            if let state {
                let codec = state.codec.optional
                state.restore("removeDuplicates") { snapshot throws(CheckpointError) in box.value = try snapshot.field("last", codec) }
                state.attach("removeDuplicates") { [weak box] in box.map { ["last": codec.encode($0.value)] } }
            }
            upstream.receive(subscriber: ValueFilterSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, mapFailure: { $0 }
            ) { input in
                defer { box.value = input }
                guard let previous = box.value else { return .emit(input) }
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
