extension Publishers {
    /// A publisher that pairs up the n-th values of two upstream publishers into tuples,
    /// as Combine's `Publishers.Zip`.
    ///
    /// A tuple is emitted as soon as every upstream has a value waiting; values
    /// wait in arrival order. A downstream request is passed to every upstream;
    /// the demand the downstream answers a tuple with goes back to the upstream
    /// whose value completed it. It finishes when an upstream has finished and
    /// none of its values waits, and fails as soon as one upstream fails.
    public struct Zip<A: Publisher, B: Publisher>: Publisher
    where A.Failure == B.Failure {
        public typealias Output = (A.Output, B.Output)
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B

        /// A zip of the given publishers, in this order.
        public init(_ a: A, _ b: B) {
            self.a = a
            self.b = b
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = ZipInner(downstream: subscriber)
            let slotA = inner.makeSlot(A.Output.self, keepsLatestOnly: false)
            let slotB = inner.makeSlot(B.Output.self, keepsLatestOnly: false)
            inner.combine = { (slotA.dequeue(), slotB.dequeue()) }
            inner.start { a.receive(subscriber: slotA); b.receive(subscriber: slotB) }
        }
    }

    /// A publisher that pairs up the n-th values of three upstream publishers into tuples,
    /// as Combine's `Publishers.Zip3`.
    ///
    /// A tuple is emitted as soon as every upstream has a value waiting; values
    /// wait in arrival order. A downstream request is passed to every upstream;
    /// the demand the downstream answers a tuple with goes back to the upstream
    /// whose value completed it. It finishes when an upstream has finished and
    /// none of its values waits, and fails as soon as one upstream fails.
    public struct Zip3<A: Publisher, B: Publisher, C: Publisher>: Publisher
    where A.Failure == B.Failure, B.Failure == C.Failure {
        public typealias Output = (A.Output, B.Output, C.Output)
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B
        /// Upstream publisher number 3.
        public let c: C

        /// A zip of the given publishers, in this order.
        public init(_ a: A, _ b: B, _ c: C) {
            self.a = a
            self.b = b
            self.c = c
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = ZipInner(downstream: subscriber)
            let slotA = inner.makeSlot(A.Output.self, keepsLatestOnly: false)
            let slotB = inner.makeSlot(B.Output.self, keepsLatestOnly: false)
            let slotC = inner.makeSlot(C.Output.self, keepsLatestOnly: false)
            inner.combine = { (slotA.dequeue(), slotB.dequeue(), slotC.dequeue()) }
            inner.start { a.receive(subscriber: slotA); b.receive(subscriber: slotB); c.receive(subscriber: slotC) }
        }
    }

    /// A publisher that pairs up the n-th values of four upstream publishers into tuples,
    /// as Combine's `Publishers.Zip4`.
    ///
    /// A tuple is emitted as soon as every upstream has a value waiting; values
    /// wait in arrival order. A downstream request is passed to every upstream;
    /// the demand the downstream answers a tuple with goes back to the upstream
    /// whose value completed it. It finishes when an upstream has finished and
    /// none of its values waits, and fails as soon as one upstream fails.
    public struct Zip4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
    where A.Failure == B.Failure, B.Failure == C.Failure, C.Failure == D.Failure {
        public typealias Output = (A.Output, B.Output, C.Output, D.Output)
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B
        /// Upstream publisher number 3.
        public let c: C
        /// Upstream publisher number 4.
        public let d: D

        /// A zip of the given publishers, in this order.
        public init(_ a: A, _ b: B, _ c: C, _ d: D) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = ZipInner(downstream: subscriber)
            let slotA = inner.makeSlot(A.Output.self, keepsLatestOnly: false)
            let slotB = inner.makeSlot(B.Output.self, keepsLatestOnly: false)
            let slotC = inner.makeSlot(C.Output.self, keepsLatestOnly: false)
            let slotD = inner.makeSlot(D.Output.self, keepsLatestOnly: false)
            inner.combine = { (slotA.dequeue(), slotB.dequeue(), slotC.dequeue(), slotD.dequeue()) }
            inner.start { a.receive(subscriber: slotA); b.receive(subscriber: slotB); c.receive(subscriber: slotC); d.receive(subscriber: slotD) }
        }
    }
}

extension Publisher {
    /// Combines this publisher with 1 other into ``Publishers/Zip`` (Combine's `zip`).
    ///
    /// - Parameters:
    ///   - other: Another publisher to combine with this one.
    public func zip<P: Publisher>(_ other: P) -> Publishers.Zip<Self, P>
    where P.Failure == Failure {
        Publishers.Zip(self, other)
    }

    /// Combines this publisher with 1 other and transforms each tuple with `transform`.
    ///
    /// - Parameters:
    ///   - other: Another publisher to combine with this one.
    ///   - transform: Builds the published value from one value of each publisher.
    public func zip<P: Publisher, Result>(_ other: P, _ transform: @escaping (Output, P.Output) -> Result)
        -> Publishers.Map<Publishers.Zip<Self, P>, Result>
    where P.Failure == Failure {
        Publishers.Map(upstream: Publishers.Zip(self, other)) { transform($0.0, $0.1) }
    }

    /// Combines this publisher with 2 others into ``Publishers/Zip3`` (Combine's `zip`).
    ///
    /// - Parameters:
    ///   - p: Publisher number 2.
    ///   - q: Publisher number 3.
    public func zip<P: Publisher, Q: Publisher>(_ p: P, _ q: Q) -> Publishers.Zip3<Self, P, Q>
    where P.Failure == Failure, Q.Failure == Failure {
        Publishers.Zip3(self, p, q)
    }

    /// Combines this publisher with 2 others and transforms each tuple with `transform`.
    ///
    /// - Parameters:
    ///   - p: Publisher number 2.
    ///   - q: Publisher number 3.
    ///   - transform: Builds the published value from one value of each publisher.
    public func zip<P: Publisher, Q: Publisher, Result>(_ p: P, _ q: Q, _ transform: @escaping (Output, P.Output, Q.Output) -> Result)
        -> Publishers.Map<Publishers.Zip3<Self, P, Q>, Result>
    where P.Failure == Failure, Q.Failure == Failure {
        Publishers.Map(upstream: Publishers.Zip3(self, p, q)) { transform($0.0, $0.1, $0.2) }
    }

    /// Combines this publisher with 3 others into ``Publishers/Zip4`` (Combine's `zip`).
    ///
    /// - Parameters:
    ///   - p: Publisher number 2.
    ///   - q: Publisher number 3.
    ///   - r: Publisher number 4.
    public func zip<P: Publisher, Q: Publisher, R: Publisher>(_ p: P, _ q: Q, _ r: R) -> Publishers.Zip4<Self, P, Q, R>
    where P.Failure == Failure, Q.Failure == Failure, R.Failure == Failure {
        Publishers.Zip4(self, p, q, r)
    }

    /// Combines this publisher with 3 others and transforms each tuple with `transform`.
    ///
    /// - Parameters:
    ///   - p: Publisher number 2.
    ///   - q: Publisher number 3.
    ///   - r: Publisher number 4.
    ///   - transform: Builds the published value from one value of each publisher.
    public func zip<P: Publisher, Q: Publisher, R: Publisher, Result>(_ p: P, _ q: Q, _ r: R, _ transform: @escaping (Output, P.Output, Q.Output, R.Output) -> Result)
        -> Publishers.Map<Publishers.Zip4<Self, P, Q, R>, Result>
    where P.Failure == Failure, Q.Failure == Failure, R.Failure == Failure {
        Publishers.Map(upstream: Publishers.Zip4(self, p, q, r)) { transform($0.0, $0.1, $0.2, $0.3) }
    }
}
