extension Publishers {
    /// Runs a publisher made by `makePublisher` at once, and again each time `signal` emits,
    /// cancelling the one running before, as the `PublishAndRepeat(onOutputFrom:)` of
    /// *Declarative Reactive Programming with Combine* (there
    /// `signal.prepend(()).map { makePublisher() }.switchToLatest()`).
    ///
    /// The first pipeline is made and subscribed right after the downstream receives its
    /// subscription (so a demand requested from `receive(subscription:)` reaches it), then
    /// the signal is subscribed. Only the latest pipeline's values are forwarded.
    /// - Demand: the signal is asked for `.unlimited`; the downstream's outstanding demand is
    ///   requested from each new pipeline, later requests go to the running one.
    /// - Completion: finishes when the signal has finished and no pipeline is running; a pipeline
    ///   that finishes leaves the publisher idle until the next signal; a pipeline failure
    ///   cancels the signal and fails the downstream.
    /// - Cancellation cancels the signal and the running pipeline.
    public struct PublishAndRepeat<Signal: Publisher, Inner: Publisher>: Publisher where Signal.Failure == Never {
        public typealias Output = Inner.Output
        public typealias Failure = Inner.Failure

        /// The publisher whose values restart the pipeline.
        public let signal: Signal
        /// Makes the pipeline, at subscription and on each signal.
        public let makePublisher: () -> Inner

        /// Runs `makePublisher()` now and on each value of `signal`.
        public init(onOutputFrom signal: Signal, _ makePublisher: @escaping () -> Inner) {
            self.signal = signal
            self.makePublisher = makePublisher
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let switcher = SignalSwitcher(downstream: subscriber, make: makePublisher)
            subscriber.receive(subscription: switcher)
            switcher.start(signal: signal, runFirst: true)
        }
    }

    /// Runs `makePublisher()` at once and again each time `signal` emits, cancelling the
    /// pipeline running before. See ``PublishAndRepeat``.
    public static func publishAndRepeat<S: Publisher, P: Publisher>(
        onOutputFrom signal: S,
        _ makePublisher: @escaping () -> P
    ) -> PublishAndRepeat<S, P> where S.Failure == Never {
        PublishAndRepeat(onOutputFrom: signal, makePublisher)
    }
}
