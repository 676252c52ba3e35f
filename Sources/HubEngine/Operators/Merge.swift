extension Publishers {
    /// A publisher that interleaves the values of two upstream publishers of the same
    /// types, as Combine's `Publishers.Merge`.
    ///
    /// Demand, buffering and completion are those of ``Publishers/MergeMany``:
    /// each upstream has at most one value outstanding while the downstream's
    /// demand is finite; it finishes when every upstream has finished and fails
    /// as soon as one fails.
    public struct Merge<A: Publisher, B: Publisher>: Publisher
    where A.Output == B.Output, A.Failure == B.Failure {
        public typealias Output = A.Output
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B

        /// A merge of the given publishers, in this order.
        public init(_ a: A, _ b: B) {
            self.a = a
            self.b = b
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            MergeInner.run(subscriber) { $0.attach(a); $0.attach(b) }
        }
    }

    /// A publisher that interleaves the values of three upstream publishers of the same
    /// types, as Combine's `Publishers.Merge3`.
    ///
    /// Demand, buffering and completion are those of ``Publishers/MergeMany``:
    /// each upstream has at most one value outstanding while the downstream's
    /// demand is finite; it finishes when every upstream has finished and fails
    /// as soon as one fails.
    public struct Merge3<A: Publisher, B: Publisher, C: Publisher>: Publisher
    where A.Output == B.Output, A.Failure == B.Failure,
        B.Output == C.Output, B.Failure == C.Failure {
        public typealias Output = A.Output
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B
        /// Upstream publisher number 3.
        public let c: C

        /// A merge of the given publishers, in this order.
        public init(_ a: A, _ b: B, _ c: C) {
            self.a = a
            self.b = b
            self.c = c
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            MergeInner.run(subscriber) { $0.attach(a); $0.attach(b); $0.attach(c) }
        }
    }

    /// A publisher that interleaves the values of four upstream publishers of the same
    /// types, as Combine's `Publishers.Merge4`.
    ///
    /// Demand, buffering and completion are those of ``Publishers/MergeMany``:
    /// each upstream has at most one value outstanding while the downstream's
    /// demand is finite; it finishes when every upstream has finished and fails
    /// as soon as one fails.
    public struct Merge4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
    where A.Output == B.Output, A.Failure == B.Failure,
        B.Output == C.Output, B.Failure == C.Failure,
        C.Output == D.Output, C.Failure == D.Failure {
        public typealias Output = A.Output
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B
        /// Upstream publisher number 3.
        public let c: C
        /// Upstream publisher number 4.
        public let d: D

        /// A merge of the given publishers, in this order.
        public init(_ a: A, _ b: B, _ c: C, _ d: D) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            MergeInner.run(subscriber) { $0.attach(a); $0.attach(b); $0.attach(c); $0.attach(d) }
        }
    }

    /// A publisher that interleaves the values of five upstream publishers of the same
    /// types, as Combine's `Publishers.Merge5`.
    ///
    /// Demand, buffering and completion are those of ``Publishers/MergeMany``:
    /// each upstream has at most one value outstanding while the downstream's
    /// demand is finite; it finishes when every upstream has finished and fails
    /// as soon as one fails.
    public struct Merge5<A: Publisher, B: Publisher, C: Publisher, D: Publisher, E: Publisher>: Publisher
    where A.Output == B.Output, A.Failure == B.Failure,
        B.Output == C.Output, B.Failure == C.Failure,
        C.Output == D.Output, C.Failure == D.Failure,
        D.Output == E.Output, D.Failure == E.Failure {
        public typealias Output = A.Output
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B
        /// Upstream publisher number 3.
        public let c: C
        /// Upstream publisher number 4.
        public let d: D
        /// Upstream publisher number 5.
        public let e: E

        /// A merge of the given publishers, in this order.
        public init(_ a: A, _ b: B, _ c: C, _ d: D, _ e: E) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
            self.e = e
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            MergeInner.run(subscriber) { $0.attach(a); $0.attach(b); $0.attach(c); $0.attach(d); $0.attach(e) }
        }
    }

    /// A publisher that interleaves the values of six upstream publishers of the same
    /// types, as Combine's `Publishers.Merge6`.
    ///
    /// Demand, buffering and completion are those of ``Publishers/MergeMany``:
    /// each upstream has at most one value outstanding while the downstream's
    /// demand is finite; it finishes when every upstream has finished and fails
    /// as soon as one fails.
    public struct Merge6<A: Publisher, B: Publisher, C: Publisher, D: Publisher, E: Publisher, F: Publisher>: Publisher
    where A.Output == B.Output, A.Failure == B.Failure,
        B.Output == C.Output, B.Failure == C.Failure,
        C.Output == D.Output, C.Failure == D.Failure,
        D.Output == E.Output, D.Failure == E.Failure,
        E.Output == F.Output, E.Failure == F.Failure {
        public typealias Output = A.Output
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B
        /// Upstream publisher number 3.
        public let c: C
        /// Upstream publisher number 4.
        public let d: D
        /// Upstream publisher number 5.
        public let e: E
        /// Upstream publisher number 6.
        public let f: F

        /// A merge of the given publishers, in this order.
        public init(_ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
            self.e = e
            self.f = f
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            MergeInner.run(subscriber) { $0.attach(a); $0.attach(b); $0.attach(c); $0.attach(d); $0.attach(e); $0.attach(f) }
        }
    }

    /// A publisher that interleaves the values of seven upstream publishers of the same
    /// types, as Combine's `Publishers.Merge7`.
    ///
    /// Demand, buffering and completion are those of ``Publishers/MergeMany``:
    /// each upstream has at most one value outstanding while the downstream's
    /// demand is finite; it finishes when every upstream has finished and fails
    /// as soon as one fails.
    public struct Merge7<A: Publisher, B: Publisher, C: Publisher, D: Publisher, E: Publisher, F: Publisher, G: Publisher>: Publisher
    where A.Output == B.Output, A.Failure == B.Failure,
        B.Output == C.Output, B.Failure == C.Failure,
        C.Output == D.Output, C.Failure == D.Failure,
        D.Output == E.Output, D.Failure == E.Failure,
        E.Output == F.Output, E.Failure == F.Failure,
        F.Output == G.Output, F.Failure == G.Failure {
        public typealias Output = A.Output
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B
        /// Upstream publisher number 3.
        public let c: C
        /// Upstream publisher number 4.
        public let d: D
        /// Upstream publisher number 5.
        public let e: E
        /// Upstream publisher number 6.
        public let f: F
        /// Upstream publisher number 7.
        public let g: G

        /// A merge of the given publishers, in this order.
        public init(_ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
            self.e = e
            self.f = f
            self.g = g
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            MergeInner.run(subscriber) { $0.attach(a); $0.attach(b); $0.attach(c); $0.attach(d); $0.attach(e); $0.attach(f); $0.attach(g) }
        }
    }

    /// A publisher that interleaves the values of eight upstream publishers of the same
    /// types, as Combine's `Publishers.Merge8`.
    ///
    /// Demand, buffering and completion are those of ``Publishers/MergeMany``:
    /// each upstream has at most one value outstanding while the downstream's
    /// demand is finite; it finishes when every upstream has finished and fails
    /// as soon as one fails.
    public struct Merge8<A: Publisher, B: Publisher, C: Publisher, D: Publisher, E: Publisher, F: Publisher, G: Publisher, H: Publisher>: Publisher
    where A.Output == B.Output, A.Failure == B.Failure,
        B.Output == C.Output, B.Failure == C.Failure,
        C.Output == D.Output, C.Failure == D.Failure,
        D.Output == E.Output, D.Failure == E.Failure,
        E.Output == F.Output, E.Failure == F.Failure,
        F.Output == G.Output, F.Failure == G.Failure,
        G.Output == H.Output, G.Failure == H.Failure {
        public typealias Output = A.Output
        public typealias Failure = A.Failure

        /// Upstream publisher number 1.
        public let a: A
        /// Upstream publisher number 2.
        public let b: B
        /// Upstream publisher number 3.
        public let c: C
        /// Upstream publisher number 4.
        public let d: D
        /// Upstream publisher number 5.
        public let e: E
        /// Upstream publisher number 6.
        public let f: F
        /// Upstream publisher number 7.
        public let g: G
        /// Upstream publisher number 8.
        public let h: H

        /// A merge of the given publishers, in this order.
        public init(_ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
            self.e = e
            self.f = f
            self.g = g
            self.h = h
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            MergeInner.run(subscriber) { $0.attach(a); $0.attach(b); $0.attach(c); $0.attach(d); $0.attach(e); $0.attach(f); $0.attach(g); $0.attach(h) }
        }
    }
}

extension Publisher {
    /// Interleaves this publisher's values with those of 1 other publisher, as Combine's `merge(with:)`.
    ///
    /// - Parameters:
    ///   - other: Another publisher whose values are interleaved with this one's.
    public func merge<P: Publisher>(with other: P) -> Publishers.Merge<Self, P>
    where P.Output == Output, P.Failure == Failure {
        Publishers.Merge(self, other)
    }

    /// Interleaves this publisher's values with those of 2 other publishers, as Combine's `merge(with:)`.
    ///
    /// - Parameters:
    ///   - p: Publisher number 2 of the merge.
    ///   - q: Publisher number 3 of the merge.
    public func merge<P: Publisher, Q: Publisher>(with p: P, _ q: Q) -> Publishers.Merge3<Self, P, Q>
    where P.Output == Output, P.Failure == Failure, Q.Output == Output, Q.Failure == Failure {
        Publishers.Merge3(self, p, q)
    }

    /// Interleaves this publisher's values with those of 3 other publishers, as Combine's `merge(with:)`.
    ///
    /// - Parameters:
    ///   - p: Publisher number 2 of the merge.
    ///   - q: Publisher number 3 of the merge.
    ///   - r: Publisher number 4 of the merge.
    public func merge<P: Publisher, Q: Publisher, R: Publisher>(with p: P, _ q: Q, _ r: R) -> Publishers.Merge4<Self, P, Q, R>
    where P.Output == Output, P.Failure == Failure, Q.Output == Output, Q.Failure == Failure, R.Output == Output, R.Failure == Failure {
        Publishers.Merge4(self, p, q, r)
    }

    /// Interleaves this publisher's values with those of 4 other publishers, as Combine's `merge(with:)`.
    ///
    /// - Parameters:
    ///   - p: Publisher number 2 of the merge.
    ///   - q: Publisher number 3 of the merge.
    ///   - r: Publisher number 4 of the merge.
    ///   - s: Publisher number 5 of the merge.
    public func merge<P: Publisher, Q: Publisher, R: Publisher, S: Publisher>(with p: P, _ q: Q, _ r: R, _ s: S) -> Publishers.Merge5<Self, P, Q, R, S>
    where P.Output == Output, P.Failure == Failure, Q.Output == Output, Q.Failure == Failure, R.Output == Output, R.Failure == Failure, S.Output == Output, S.Failure == Failure {
        Publishers.Merge5(self, p, q, r, s)
    }

    /// Interleaves this publisher's values with those of 5 other publishers, as Combine's `merge(with:)`.
    ///
    /// - Parameters:
    ///   - p: Publisher number 2 of the merge.
    ///   - q: Publisher number 3 of the merge.
    ///   - r: Publisher number 4 of the merge.
    ///   - s: Publisher number 5 of the merge.
    ///   - t: Publisher number 6 of the merge.
    public func merge<P: Publisher, Q: Publisher, R: Publisher, S: Publisher, T: Publisher>(with p: P, _ q: Q, _ r: R, _ s: S, _ t: T) -> Publishers.Merge6<Self, P, Q, R, S, T>
    where P.Output == Output, P.Failure == Failure, Q.Output == Output, Q.Failure == Failure, R.Output == Output, R.Failure == Failure, S.Output == Output, S.Failure == Failure, T.Output == Output, T.Failure == Failure {
        Publishers.Merge6(self, p, q, r, s, t)
    }

    /// Interleaves this publisher's values with those of 6 other publishers, as Combine's `merge(with:)`.
    ///
    /// - Parameters:
    ///   - p: Publisher number 2 of the merge.
    ///   - q: Publisher number 3 of the merge.
    ///   - r: Publisher number 4 of the merge.
    ///   - s: Publisher number 5 of the merge.
    ///   - t: Publisher number 6 of the merge.
    ///   - u: Publisher number 7 of the merge.
    public func merge<P: Publisher, Q: Publisher, R: Publisher, S: Publisher, T: Publisher, U: Publisher>(with p: P, _ q: Q, _ r: R, _ s: S, _ t: T, _ u: U) -> Publishers.Merge7<Self, P, Q, R, S, T, U>
    where P.Output == Output, P.Failure == Failure, Q.Output == Output, Q.Failure == Failure, R.Output == Output, R.Failure == Failure, S.Output == Output, S.Failure == Failure, T.Output == Output, T.Failure == Failure, U.Output == Output, U.Failure == Failure {
        Publishers.Merge7(self, p, q, r, s, t, u)
    }

    /// Interleaves this publisher's values with those of 7 other publishers, as Combine's `merge(with:)`.
    ///
    /// - Parameters:
    ///   - p: Publisher number 2 of the merge.
    ///   - q: Publisher number 3 of the merge.
    ///   - r: Publisher number 4 of the merge.
    ///   - s: Publisher number 5 of the merge.
    ///   - t: Publisher number 6 of the merge.
    ///   - u: Publisher number 7 of the merge.
    ///   - v: Publisher number 8 of the merge.
    public func merge<P: Publisher, Q: Publisher, R: Publisher, S: Publisher, T: Publisher, U: Publisher, V: Publisher>(with p: P, _ q: Q, _ r: R, _ s: S, _ t: T, _ u: U, _ v: V) -> Publishers.Merge8<Self, P, Q, R, S, T, U, V>
    where P.Output == Output, P.Failure == Failure, Q.Output == Output, Q.Failure == Failure, R.Output == Output, R.Failure == Failure, S.Output == Output, S.Failure == Failure, T.Output == Output, T.Failure == Failure, U.Output == Output, U.Failure == Failure, V.Output == Output, V.Failure == Failure {
        Publishers.Merge8(self, p, q, r, s, t, u, v)
    }
}
