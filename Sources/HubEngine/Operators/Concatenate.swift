import HubValue

extension Publishers {
    /// Publishes every value of a prefix publisher, then, once it finishes, every value of a
    /// suffix publisher, as Combine's `Publishers.Concatenate` (behind `prepend` and `append`).
    ///
    /// The downstream receives its subscription when the prefix is subscribed. The operator
    /// keeps count of the demand the downstream has asked for and not yet received: requests
    /// go to the prefix while it runs; when the prefix finishes, the suffix is subscribed and
    /// the outstanding demand is requested from it in one go, and later requests go to the
    /// suffix. A failure of the prefix ends everything (the suffix is never subscribed).
    /// As in Combine, a prefix value arriving without outstanding demand is dropped.
    ///
    /// With a `state`, whether the prefix has finished is checkpointed: a subscription
    /// restored past the prefix subscribes the suffix at once (`input | scan(…) |
    /// prepend(s)` does not emit `s` again after a restart).
    public struct Concatenate<Prefix: Publisher, Suffix: Publisher>: Publisher
    where Prefix.Output == Suffix.Output, Prefix.Failure == Suffix.Failure {
        public typealias Output = Suffix.Output
        public typealias Failure = Suffix.Failure

        /// The publisher whose values come first.
        public let prefix: Prefix
        /// The publisher subscribed once `prefix` finishes.
        public let suffix: Suffix

        /// Where the phase (prefix or suffix) is checkpointed, if it is.
        public let state: OperatorStateSlot?

        /// `prefix`'s values followed by `suffix`'s, the phase checkpointed in `state` if given.
        public init(prefix: Prefix, suffix: Suffix, state: OperatorStateSlot? = nil) {
            self.prefix = prefix
            self.suffix = suffix
            self.state = state
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, suffix: suffix)
            if let slot = state {
                let state = OperatorState(slot: slot, codec: StateCodec<Void>.void)
                var pastPrefix = false
                state.restore("concatenate") { snapshot throws(CheckpointError) in
                    pastPrefix = try snapshot.field("phase").stringValue == "suffix"
                }
                state.attach("concatenate") { [weak inner] in inner?.isPastPrefix == true ? ["phase": "suffix"] : nil }
                if pastPrefix {
                    inner.skipPrefix()
                    return
                }
            }
            prefix.receive(subscriber: Inner.PrefixSubscriber(inner: inner))
        }

        private final class Inner<Downstream: Subscriber>: Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            private enum Phase {
                /// Waiting for the prefix's subscription.
                case awaitingPrefix
                /// The prefix is running.
                case prefix(any Subscription)
                /// The prefix finished; waiting for the suffix's subscription.
                case awaitingSuffix
                /// The suffix is running.
                case suffix(any Subscription)
                /// Completed or cancelled.
                case terminal
            }

            private var downstream: Downstream?
            private var suffix: Suffix?
            private var phase = Phase.awaitingPrefix
            /// Demand the downstream asked for and has not received from the prefix.
            private var pending = Subscribers.Demand.none

            init(downstream: Downstream, suffix: Suffix) {
                self.downstream = downstream
                self.suffix = suffix
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0, downstream != nil else { return }
                pending += demand
                switch phase {
                case .prefix(let subscription), .suffix(let subscription):
                    subscription.request(demand)
                case .awaitingPrefix, .awaitingSuffix, .terminal:
                    break
                }
            }

            func cancel() {
                let current = phase
                phase = .terminal
                downstream = nil
                suffix = nil
                switch current {
                case .prefix(let subscription), .suffix(let subscription):
                    subscription.cancel()
                case .awaitingPrefix, .awaitingSuffix, .terminal:
                    break
                }
            }

            /// Whether the prefix has finished (for a checkpoint).
            fileprivate var isPastPrefix: Bool {
                switch phase {
                case .awaitingSuffix, .suffix: return true
                case .awaitingPrefix, .prefix, .terminal: return false
                }
            }

            /// Goes straight to the suffix, the prefix having finished before a checkpoint.
            fileprivate func skipPrefix() {
                guard case .awaitingPrefix = phase, let downstream else { return }
                phase = .awaitingSuffix
                downstream.receive(subscription: self)
                guard case .awaitingSuffix = phase else { return }
                suffix.take()?.receive(subscriber: SuffixSubscriber(inner: self))
            }

            // MARK: Prefix

            fileprivate func prefixReceive(subscription: any Subscription) {
                guard case .awaitingPrefix = phase, let downstream else {
                    subscription.cancel()
                    return
                }
                phase = .prefix(subscription)
                downstream.receive(subscription: self)
            }

            fileprivate func prefixReceive(_ input: Output) -> Subscribers.Demand {
                guard case .prefix = phase, let downstream, pending > 0 else { return .none }
                pending -= 1
                let more = downstream.receive(input)
                guard more > 0 else { return .none }
                pending += more
                return more
            }

            fileprivate func prefixReceive(completion: Subscribers.Completion<Failure>) {
                guard case .prefix = phase else { return }
                switch completion {
                case .finished:
                    phase = .awaitingSuffix
                    suffix.take()?.receive(subscriber: SuffixSubscriber(inner: self))
                case .failure:
                    phase = .terminal
                    suffix = nil
                    downstream.take()?.receive(completion: completion)
                }
            }

            // MARK: Suffix

            fileprivate func suffixReceive(subscription: any Subscription) {
                guard case .awaitingSuffix = phase else {
                    subscription.cancel()
                    return
                }
                phase = .suffix(subscription)
                if pending > 0 { subscription.request(pending) }
            }

            fileprivate func suffixReceive(_ input: Output) -> Subscribers.Demand {
                guard case .suffix = phase, let downstream else { return .none }
                return downstream.receive(input)
            }

            fileprivate func suffixReceive(completion: Subscribers.Completion<Failure>) {
                guard case .suffix = phase else { return }
                phase = .terminal
                downstream.take()?.receive(completion: completion)
            }

            /// The subscriber attached to the prefix publisher.
            struct PrefixSubscriber: Subscriber {
                typealias Input = Output
                typealias Failure = Suffix.Failure
                let inner: Inner
                var combineIdentifier: CombineIdentifier { CombineIdentifier(inner) }
                func receive(subscription: any Subscription) { inner.prefixReceive(subscription: subscription) }
                func receive(_ input: Input) -> Subscribers.Demand { inner.prefixReceive(input) }
                func receive(completion: Subscribers.Completion<Failure>) { inner.prefixReceive(completion: completion) }
            }

            /// The subscriber attached to the suffix publisher.
            struct SuffixSubscriber: Subscriber {
                typealias Input = Output
                typealias Failure = Suffix.Failure
                let inner: Inner
                var combineIdentifier: CombineIdentifier { CombineIdentifier(inner) }
                func receive(subscription: any Subscription) { inner.suffixReceive(subscription: subscription) }
                func receive(_ input: Input) -> Subscribers.Demand { inner.suffixReceive(input) }
                func receive(completion: Subscribers.Completion<Failure>) { inner.suffixReceive(completion: completion) }
            }
        }
    }
}

extension Publishers.Concatenate: Equatable where Prefix: Equatable, Suffix: Equatable {
    /// Equal prefixes and suffixes (and the same checkpoint slot, if any).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.prefix == rhs.prefix && lhs.suffix == rhs.suffix && lhs.state === rhs.state
    }
}

extension Publisher {
    /// Publishes `elements` before this publisher's values.
    public func prepend(_ elements: Output...) -> Publishers.Concatenate<Publishers.Sequence<[Output], Failure>, Self> {
        prepend(elements)
    }

    /// Publishes the elements of `elements` before this publisher's values.
    public func prepend<Elements: Swift.Sequence>(_ elements: Elements)
        -> Publishers.Concatenate<Publishers.Sequence<Elements, Failure>, Self> where Elements.Element == Output
    {
        prepend(Publishers.Sequence(sequence: elements))
    }

    /// Publishes all of `publisher`'s values, then, once it finishes, this publisher's.
    public func prepend<P: Publisher>(_ publisher: P) -> Publishers.Concatenate<P, Self>
    where P.Output == Output, P.Failure == Failure {
        Publishers.Concatenate(prefix: publisher, suffix: self)
    }

    /// Publishes `elements` after this publisher finishes.
    public func append(_ elements: Output...) -> Publishers.Concatenate<Self, Publishers.Sequence<[Output], Failure>> {
        append(elements)
    }

    /// Publishes the elements of `elements` after this publisher finishes.
    public func append<Elements: Swift.Sequence>(_ elements: Elements)
        -> Publishers.Concatenate<Self, Publishers.Sequence<Elements, Failure>> where Elements.Element == Output
    {
        append(Publishers.Sequence(sequence: elements))
    }

    /// Publishes this publisher's values, then, once it finishes, all of `publisher`'s.
    public func append<P: Publisher>(_ publisher: P) -> Publishers.Concatenate<Self, P>
    where P.Output == Output, P.Failure == Failure {
        Publishers.Concatenate(prefix: self, suffix: publisher)
    }
}
