extension Publishers {
    /// Runs a publisher made by `makePublisher` each time `signal` emits, cancelling the one
    /// running before, as the `Publish(onOutputFrom:)` of *Declarative Reactive Programming with
    /// Combine* (there `signal.map { makePublisher() }.switchToLatest()`).
    ///
    /// Nothing runs before the signal's first value (see ``PublishAndRepeat`` for a first run at
    /// subscription). Only the latest pipeline's values are forwarded: switch-to-latest, not merge.
    /// - Demand: the signal is asked for `.unlimited`; the downstream's outstanding demand is
    ///   requested from each new pipeline, later requests go to the running one.
    /// - Completion: finishes when the signal has finished and no pipeline is running; a pipeline
    ///   that finishes leaves the publisher idle until the next signal; a pipeline failure
    ///   cancels the signal and fails the downstream.
    /// - Cancellation cancels the signal and the running pipeline.
    public struct Publish<Signal: Publisher, Inner: Publisher>: Publisher where Signal.Failure == Never {
        public typealias Output = Inner.Output
        public typealias Failure = Inner.Failure

        /// The publisher whose values start a new pipeline.
        public let signal: Signal
        /// Makes the pipeline run on each signal.
        public let makePublisher: () -> Inner

        /// Runs `makePublisher()` on each value of `signal`.
        public init(onOutputFrom signal: Signal, _ makePublisher: @escaping () -> Inner) {
            self.signal = signal
            self.makePublisher = makePublisher
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let switcher = SignalSwitcher(downstream: subscriber, make: makePublisher)
            subscriber.receive(subscription: switcher)
            switcher.start(signal: signal, runFirst: false)
        }
    }

    /// Runs `makePublisher()` each time `signal` emits, cancelling the pipeline running before.
    /// See ``Publish``.
    public static func publish<S: Publisher, P: Publisher>(
        onOutputFrom signal: S,
        _ makePublisher: @escaping () -> P
    ) -> Publish<S, P> where S.Failure == Never {
        Publish(onOutputFrom: signal, makePublisher)
    }
}
