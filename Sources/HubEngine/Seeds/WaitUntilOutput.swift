extension Publishers {
    /// Holds back the subscription to `upstream` until `signal` emits once, then runs `upstream`,
    /// as the `wait(untilOutputFrom:)` operator of *Declarative Reactive Programming with Combine*
    /// (there `prepend(Empty(completeImmediately: false).prefix(untilOutputFrom: signal))`).
    ///
    /// - The downstream receives its subscription at once; the signal is subscribed right after
    ///   and asked for `.max(1)`, whatever the downstream demand.
    /// - When the signal emits, its subscription is cancelled and `upstream` is subscribed; the
    ///   demand the downstream requested while waiting is requested from `upstream` as soon as
    ///   its subscription arrives; later requests pass straight through.
    /// - Values and the completion of `upstream` are forwarded unchanged.
    /// - If the signal finishes without emitting, the publisher keeps waiting forever (as the
    ///   never-completing `Empty` of the original does): nothing is delivered until cancelled.
    /// - `cancel()` cancels the signal while waiting, `upstream` afterwards; nothing is
    ///   delivered after it.
    public struct WaitUntilOutput<Upstream: Publisher, Signal: Publisher>: Publisher where Signal.Failure == Never {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher run once the signal has emitted.
        public let upstream: Upstream
        /// The publisher whose first value releases `upstream`.
        public let signal: Signal

        /// `upstream`, held back until `signal` emits.
        public init(upstream: Upstream, signal: Signal) {
            self.upstream = upstream
            self.signal = signal
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = Inner(downstream: subscriber, upstream: upstream)
            subscriber.receive(subscription: inner)
            inner.start(signal)
        }

        private final class Inner<Downstream: Subscriber>: Subscription
        where Downstream.Input == Output, Downstream.Failure == Failure {
            private enum State {
                /// Waiting for the signal (its subscription, once it has arrived).
                case waiting((any Subscription)?)
                /// `upstream` subscribed (its subscription, once it has arrived).
                case running((any Subscription)?)
                /// Cancelled or completed.
                case done
            }

            private var downstream: Downstream?
            private var upstream: Upstream?
            private var state = State.waiting(nil)
            /// Demand requested while no upstream subscription exists yet.
            private var pending = Subscribers.Demand.none

            init(downstream: Downstream, upstream: Upstream) {
                self.downstream = downstream
                self.upstream = upstream
            }

            func start(_ signal: Signal) {
                guard case .waiting = state else { return }
                signal.receive(subscriber: SignalSide(parent: self))
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0 else { return }
                switch state {
                case .running(let subscription?):
                    subscription.request(demand)
                case .waiting, .running(nil):
                    pending += demand
                case .done:
                    break
                }
            }

            func cancel() {
                let previous = state
                state = .done
                downstream = nil
                upstream = nil
                switch previous {
                case .waiting(let subscription?), .running(let subscription?): subscription.cancel()
                default: break
                }
            }

            // MARK: signal side

            fileprivate func signalSubscribed(_ subscription: any Subscription) {
                guard case .waiting(nil) = state else {
                    subscription.cancel()
                    return
                }
                state = .waiting(subscription)
                subscription.request(.max(1))
            }

            fileprivate func signalFired() {
                guard case .waiting(let subscription) = state, let upstream = upstream.take() else { return }
                state = .running(nil)
                subscription?.cancel()
                upstream.receive(subscriber: UpstreamSide(parent: self))
            }

            // MARK: upstream side

            fileprivate func upstreamSubscribed(_ subscription: any Subscription) {
                guard case .running(nil) = state else {
                    subscription.cancel()
                    return
                }
                state = .running(subscription)
                let demand = pending
                pending = .none
                if demand > 0 { subscription.request(demand) }
            }

            fileprivate func upstreamValue(_ value: Output) -> Subscribers.Demand {
                guard case .running = state, let downstream else { return .none }
                return downstream.receive(value)
            }

            fileprivate func upstreamCompleted(_ completion: Subscribers.Completion<Failure>) {
                guard case .running = state, let downstream = downstream.take() else { return }
                state = .done
                downstream.receive(completion: completion)
            }
        }

        private struct SignalSide<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Signal.Output
            typealias Failure = Never
            let parent: Inner<Downstream>
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { parent.signalSubscribed(subscription) }
            func receive(_ input: Input) -> Subscribers.Demand {
                parent.signalFired()
                return .none
            }
            /// A signal that finishes without emitting leaves the publisher waiting.
            func receive(completion: Subscribers.Completion<Never>) {}
        }

        private struct UpstreamSide<Downstream: Subscriber>: Subscriber
        where Downstream.Input == Output, Downstream.Failure == Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure
            let parent: Inner<Downstream>
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { parent.upstreamSubscribed(subscription) }
            func receive(_ input: Input) -> Subscribers.Demand { parent.upstreamValue(input) }
            func receive(completion: Subscribers.Completion<Failure>) { parent.upstreamCompleted(completion) }
        }
    }
}

extension Publisher {
    /// Waits until `signal` emits once, then subscribes to this publisher and forwards its events.
    /// See ``Publishers/WaitUntilOutput`` for demand, completion and cancellation.
    public func wait<S: Publisher>(untilOutputFrom signal: S) -> Publishers.WaitUntilOutput<Self, S> where S.Failure == Never {
        Publishers.WaitUntilOutput(upstream: self, signal: signal)
    }
}
