import HubValue

extension Publishers {
    /// Drops a value when it duplicates the previous upstream value, as Combine's
    /// `Publishers.RemoveDuplicates`.
    ///
    /// The comparison is always with the previous *upstream* value (dropped or not).
    /// A dropped value gives back a demand of one.
    public struct RemoveDuplicates<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher whose duplicates are removed.
        public let upstream: Upstream
        /// Returns true when the second value duplicates the first.
        public let predicate: (Output, Output) -> Bool

        /// Where the previous upstream value is checkpointed, if it is.
        public let state: OperatorState<Output>?

        /// Removes from `upstream` the values that `predicate` finds equal to their
        /// predecessor, the previous value checkpointed in `state` if given.
        public init(upstream: Upstream, predicate: @escaping (Output, Output) -> Bool, state: OperatorState<Output>? = nil) {
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
                return predicate(previous, input) ? .skip : .emit(input)
            })
        }
    }
}

extension Publisher where Output: Equatable {
    /// Drops each value equal to the previous one.
    public func removeDuplicates() -> Publishers.RemoveDuplicates<Self> {
        Publishers.RemoveDuplicates(upstream: self, predicate: ==)
    }
}

extension Publisher {
    /// Drops each value that `predicate(previous, value)` calls a duplicate.
    public func removeDuplicates(by predicate: @escaping (Output, Output) -> Bool) -> Publishers.RemoveDuplicates<Self> {
        Publishers.RemoveDuplicates(upstream: self, predicate: predicate)
    }
}
