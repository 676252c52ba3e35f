import HubValue

extension Publishers {
    /// Republishes its upstream, counting the values it passes on, so that a cold source
    /// rebuilt after a checkpoint (`just`, `sequence`, built again inside a restored
    /// `flatMap`) does not deliver again what it delivered before: restored from its
    /// `state`, it drops that many values from the start of its upstream, giving back a
    /// demand of one for each.
    ///
    /// Without a checkpoint (or without a `state`) it passes everything through; demand
    /// passes through unchanged.
    public struct SkipOnRestore<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The cold source.
        public let upstream: Upstream
        /// Where the count of values passed on is checkpointed, if it is.
        public let state: OperatorStateSlot?

        /// `upstream`, its values counted in `state` if given.
        public init(upstream: Upstream, state: OperatorStateSlot?) {
            self.upstream = upstream
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let counts = StateBox((passed: 0, toSkip: 0))
            if let slot = state {
                let state = OperatorState(slot: slot, codec: StateCodec<Void>.void)
                state.restore("source") { snapshot throws(CheckpointError) in
                    let passed = try snapshot.int("passed")
                    guard passed >= 0 else { throw CheckpointError(.malformed, "a source restored a negative count") }
                    counts.value = (passed, passed)
                }
                state.attach("source") { [weak counts] in counts.map { ["passed": .int(Int64($0.value.passed))] } }
            }
            upstream.receive(subscriber: ValueFilterSubscription<Upstream.Output, Upstream.Failure, S>(
                downstream: subscriber, mapFailure: { $0 }
            ) { input in
                if counts.value.toSkip > 0 {
                    counts.value.toSkip -= 1
                    return .skip
                }
                counts.value.passed += 1
                return .emit(input)
            })
        }
    }
}
