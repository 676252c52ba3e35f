import HubValue

extension Publishers {
    /// Pairs up the n-th values of any number of publishers of one type into arrays, as
    /// ``Publishers/Zip`` does for two (the same subscription, for any count).
    ///
    /// An array is emitted as soon as every upstream has a value waiting; values wait in
    /// arrival order. A downstream request is passed to every upstream; the demand the
    /// downstream answers an array with goes back to the upstream whose value completed
    /// it. It finishes when an upstream has finished and none of its values waits, and
    /// fails as soon as one upstream fails. With no publisher it finishes at once.
    ///
    /// With a `state`, the values waiting in each upstream's queue are checkpointed: a
    /// subscription restores them before it subscribes the upstreams.
    public struct ZipMany<Upstream: Publisher>: Publisher {
        public typealias Output = [Upstream.Output]
        public typealias Failure = Upstream.Failure

        /// The publishers zipped, in output order.
        public let publishers: [Upstream]
        /// Where the waiting values are checkpointed, if they are.
        public let state: OperatorState<Upstream.Output>?

        /// A zip of `publishers`, checkpointed in `state` if given.
        public init(_ publishers: [Upstream], state: OperatorState<Upstream.Output>? = nil) {
            self.publishers = publishers
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            guard !publishers.isEmpty else {
                Empty<Output, Failure>().receive(subscriber: subscriber)
                return
            }
            let inner = ZipInner(downstream: subscriber)
            let slots = publishers.map { _ in inner.makeSlot(Upstream.Output.self, keepsLatestOnly: false) }
            if let state {
                let codec = state.codec.array.array
                let count = publishers.count
                state.restore("zip") { snapshot throws(CheckpointError) in
                    let queues = try snapshot.field("queues", codec)
                    guard queues.count == count else {
                        throw CheckpointError(.malformed, "zip of \(count) publishers restored \(queues.count) queues")
                    }
                    for (slot, queue) in Swift.zip(slots, queues) { slot.restore(queue) }
                }
                state.attach("zip") { [weak inner] in
                    guard let inner, inner.isActive else { return nil }
                    return ["queues": codec.encode(slots.map { Array($0.values) })]
                }
            }
            inner.combine = { slots.map { $0.dequeue() } }
            inner.start {
                for (publisher, slot) in Swift.zip(publishers, slots) { publisher.receive(subscriber: slot) }
            }
        }
    }
}
