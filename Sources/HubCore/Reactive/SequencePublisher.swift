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
        public init(sequence: Elements) { self.sequence = sequence }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            var iterator = sequence.makeIterator()
            guard let first = iterator.next() else {
                subscriber.receive(subscription: Subscriptions.empty)
                subscriber.receive(completion: .finished)
                return
            }
            subscriber.receive(subscription: Inner(iterator: iterator, next: first, downstream: subscriber))
        }

        private final class Inner<Downstream: Subscriber>: Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            private var iterator: Elements.Iterator
            private var next: Output?
            private var downstream: Downstream?
            private var demand = Subscribers.Demand.none
            private var emitting = false

            init(iterator: Elements.Iterator, next: Output, downstream: Downstream) {
                self.iterator = iterator
                self.next = next
                self.downstream = downstream
            }

            func request(_ demand: Subscribers.Demand) {
                guard downstream != nil else { return }
                self.demand += demand
                guard !emitting else { return }
                emitting = true
                defer { emitting = false }
                while let downstream, self.demand > 0 {
                    guard let current = next else { break }
                    self.demand -= 1
                    next = iterator.next()
                    let more = downstream.receive(current)
                    if more > 0 { self.demand += more }
                    if next == nil, let finishing = self.downstream.take() {
                        finishing.receive(completion: .finished)
                        return
                    }
                }
            }

            func cancel() {
                downstream = nil
                next = nil
            }
        }
    }
}

extension Swift.Sequence {
    /// A publisher of this sequence's elements, as in Combine.
    public var publisher: Publishers.Sequence<Self, Never> { Publishers.Sequence(sequence: self) }
}
