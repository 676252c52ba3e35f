extension Publishers {
    /// A publisher that emits a tuple of the latest values of two upstream publishers whenever one of them emits,
    /// as Combine's `Publishers.CombineLatest`.
    ///
    /// Nothing is emitted until every upstream has emitted once. A downstream
    /// request is passed to every upstream; a value that arrives without
    /// downstream demand only replaces its upstream's latest value (no tuple is
    /// kept for later). It finishes when every upstream has finished, and fails
    /// as soon as one upstream fails, cancelling the others.
    public struct CombineLatest<A: Publisher, B: Publisher>: Publisher
    where A.Failure == B.Failure {
        public typealias Output = (A.Output, B.Output)
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B

        /// A combineLatest of the given publishers, in this order.
        public init(_ a: A, _ b: B) {
            self.a = a
            self.b = b
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = CombineLatestInner(downstream: subscriber)
            let slotA = inner.makeSlot(A.Output.self, keepsLatestOnly: true)
            let slotB = inner.makeSlot(B.Output.self, keepsLatestOnly: true)
            inner.combine = { (slotA.latest, slotB.latest) }
            inner.start { a.receive(subscriber: slotA); b.receive(subscriber: slotB) }
        }
    }

    /// A publisher that emits a tuple of the latest values of three upstream publishers whenever one of them emits,
    /// as Combine's `Publishers.CombineLatest3`.
    ///
    /// Nothing is emitted until every upstream has emitted once. A downstream
    /// request is passed to every upstream; a value that arrives without
    /// downstream demand only replaces its upstream's latest value (no tuple is
    /// kept for later). It finishes when every upstream has finished, and fails
    /// as soon as one upstream fails, cancelling the others.
    public struct CombineLatest3<A: Publisher, B: Publisher, C: Publisher>: Publisher
    where A.Failure == B.Failure, B.Failure == C.Failure {
        public typealias Output = (A.Output, B.Output, C.Output)
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B
        /// Upstream publisher number 3.
        public let c: C

        /// A combineLatest of the given publishers, in this order.
        public init(_ a: A, _ b: B, _ c: C) {
            self.a = a
            self.b = b
            self.c = c
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = CombineLatestInner(downstream: subscriber)
            let slotA = inner.makeSlot(A.Output.self, keepsLatestOnly: true)
            let slotB = inner.makeSlot(B.Output.self, keepsLatestOnly: true)
            let slotC = inner.makeSlot(C.Output.self, keepsLatestOnly: true)
            inner.combine = { (slotA.latest, slotB.latest, slotC.latest) }
            inner.start { a.receive(subscriber: slotA); b.receive(subscriber: slotB); c.receive(subscriber: slotC) }
        }
    }

    /// A publisher that emits a tuple of the latest values of four upstream publishers whenever one of them emits,
    /// as Combine's `Publishers.CombineLatest4`.
    ///
    /// Nothing is emitted until every upstream has emitted once. A downstream
    /// request is passed to every upstream; a value that arrives without
    /// downstream demand only replaces its upstream's latest value (no tuple is
    /// kept for later). It finishes when every upstream has finished, and fails
    /// as soon as one upstream fails, cancelling the others.
    public struct CombineLatest4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
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

        /// A combineLatest of the given publishers, in this order.
        public init(_ a: A, _ b: B, _ c: C, _ d: D) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = CombineLatestInner(downstream: subscriber)
            let slotA = inner.makeSlot(A.Output.self, keepsLatestOnly: true)
            let slotB = inner.makeSlot(B.Output.self, keepsLatestOnly: true)
            let slotC = inner.makeSlot(C.Output.self, keepsLatestOnly: true)
            let slotD = inner.makeSlot(D.Output.self, keepsLatestOnly: true)
            inner.combine = { (slotA.latest, slotB.latest, slotC.latest, slotD.latest) }
            inner.start { a.receive(subscriber: slotA); b.receive(subscriber: slotB); c.receive(subscriber: slotC); d.receive(subscriber: slotD) }
        }
    }
}

extension Publisher {
    /// Combines this publisher with 1 other into ``Publishers/CombineLatest`` (Combine's `combineLatest`).
    ///
    /// - Parameters:
    ///   - other: Another publisher to combine with this one.
    public func combineLatest<P: Publisher>(_ other: P) -> Publishers.CombineLatest<Self, P>
    where P.Failure == Failure {
        Publishers.CombineLatest(self, other)
    }

    /// Combines this publisher with 1 other and transforms each tuple with `transform`.
    ///
    /// - Parameters:
    ///   - other: Another publisher to combine with this one.
    ///   - transform: Builds the published value from one value of each publisher.
    public func combineLatest<P: Publisher, Result>(_ other: P, _ transform: @escaping (Output, P.Output) -> Result)
        -> Publishers.Map<Publishers.CombineLatest<Self, P>, Result>
    where P.Failure == Failure {
        Publishers.Map(upstream: Publishers.CombineLatest(self, other)) { transform($0.0, $0.1) }
    }

    /// Combines this publisher with 2 others into ``Publishers/CombineLatest3`` (Combine's `combineLatest`).
    ///
    /// - Parameters:
    ///   - p: Publisher number 2.
    ///   - q: Publisher number 3.
    public func combineLatest<P: Publisher, Q: Publisher>(_ p: P, _ q: Q) -> Publishers.CombineLatest3<Self, P, Q>
    where P.Failure == Failure, Q.Failure == Failure {
        Publishers.CombineLatest3(self, p, q)
    }

    /// Combines this publisher with 2 others and transforms each tuple with `transform`.
    ///
    /// - Parameters:
    ///   - p: Publisher number 2.
    ///   - q: Publisher number 3.
    ///   - transform: Builds the published value from one value of each publisher.
    public func combineLatest<P: Publisher, Q: Publisher, Result>(_ p: P, _ q: Q, _ transform: @escaping (Output, P.Output, Q.Output) -> Result)
        -> Publishers.Map<Publishers.CombineLatest3<Self, P, Q>, Result>
    where P.Failure == Failure, Q.Failure == Failure {
        Publishers.Map(upstream: Publishers.CombineLatest3(self, p, q)) { transform($0.0, $0.1, $0.2) }
    }

    /// Combines this publisher with 3 others into ``Publishers/CombineLatest4`` (Combine's `combineLatest`).
    ///
    /// - Parameters:
    ///   - p: Publisher number 2.
    ///   - q: Publisher number 3.
    ///   - r: Publisher number 4.
    public func combineLatest<P: Publisher, Q: Publisher, R: Publisher>(_ p: P, _ q: Q, _ r: R) -> Publishers.CombineLatest4<Self, P, Q, R>
    where P.Failure == Failure, Q.Failure == Failure, R.Failure == Failure {
        Publishers.CombineLatest4(self, p, q, r)
    }

    /// Combines this publisher with 3 others and transforms each tuple with `transform`.
    ///
    /// - Parameters:
    ///   - p: Publisher number 2.
    ///   - q: Publisher number 3.
    ///   - r: Publisher number 4.
    ///   - transform: Builds the published value from one value of each publisher.
    public func combineLatest<P: Publisher, Q: Publisher, R: Publisher, Result>(_ p: P, _ q: Q, _ r: R, _ transform: @escaping (Output, P.Output, Q.Output, R.Output) -> Result)
        -> Publishers.Map<Publishers.CombineLatest4<Self, P, Q, R>, Result>
    where P.Failure == Failure, Q.Failure == Failure, R.Failure == Failure {
        Publishers.Map(upstream: Publishers.CombineLatest4(self, p, q, r)) { transform($0.0, $0.1, $0.2, $0.3) }
    }
}
