extension Publishers {
    /// A publisher that emits the elements of a sequence as they are demanded, then finishes,
    /// as Combine's `Publishers.Sequence`.
    ///
    /// It is cold: it produces exactly what is requested. A request made from
    /// inside the subscriber's `receive(_:)` is added to the running demand.
    public struct Sequence<Elements: Swift.Sequence, Failure: Error>: Publisher {
        public typealias Output = Elements.Element

        /// The elements emitted.
        public let sequence: Elements

        /// A publisher of `sequence`'s elements.
        @inlinable public init(sequence: Elements) { self.sequence = sequence }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            var iterator = sequence.makeIterator()
            guard let first = iterator.next() else {
                subscriber.receive(subscription: Subscriptions.empty)
                subscriber.receive(completion: .finished)
                return
            }
            let inner = Inner(iterator: iterator, next: first, downstream: subscriber)
            // `request` arrives through the `Subscription` existential, which
            // runs unspecialised code; the emitting loop is entered through a
            // closure made here, where the types are known, so it runs specialised.
            inner.drainEntry = { $0.drain() }
            subscriber.receive(subscription: inner)
        }

        @usableFromInline
        internal final class Inner<Downstream: Subscriber>: Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            @exclusivity(unchecked) @usableFromInline var iterator: Elements.Iterator
            @exclusivity(unchecked) @usableFromInline var next: Output?
            @exclusivity(unchecked) @usableFromInline var downstream: Downstream?
            @exclusivity(unchecked) @usableFromInline var demand = Subscribers.Demand.none
            @exclusivity(unchecked) @usableFromInline var emitting = false

            @inlinable init(iterator: Elements.Iterator, next: Output, downstream: Downstream) {
                self.iterator = iterator
                self.next = next
                self.downstream = downstream
            }

            @exclusivity(unchecked) @usableFromInline var drainEntry: ((Inner) -> Void)?

            @inlinable func request(_ demand: Subscribers.Demand) {
                guard downstream != nil else { return }
                self.demand += demand
                guard !emitting else { return }
                if let drainEntry { drainEntry(self) } else { drain() }
            }

            /// Emits while there is demand; a request made meanwhile only adds to `demand`.
            @inlinable func drain() {
                emitting = true
                defer { emitting = false }
                while let downstream, self.demand > 0 {
                    guard let current = next else { break }
                    self.demand -= 1
                    next = iterator.next()
                    let more = downstream.receive(current)
                    if more > 0 { self.demand += more }
                    if next == nil, let finishing = self.downstream.take() {
                        drainEntry = nil
                        finishing.receive(completion: .finished)
                        return
                    }
                }
            }

            @inlinable func cancel() {
                downstream = nil
                next = nil
                drainEntry = nil
            }
        }
    }
}

extension Swift.Sequence {
    /// A publisher of this sequence's elements, as in Combine.
    @inlinable public var publisher: Publishers.Sequence<Self, Never> { Publishers.Sequence(sequence: self) }
}
