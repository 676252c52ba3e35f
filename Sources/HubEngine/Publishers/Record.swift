/// A publisher that replays a recorded list of values and a completion to each subscriber,
/// as Combine's `Record`.
///
/// Values are delivered as they are demanded; the completion follows the last value at
/// once (an empty recording completes on subscription).
public struct Record<Output, Failure: Error>: Publisher {
    /// The values and the completion replayed.
    public let recording: Recording

    /// A record built by `record`, which receives an empty recording to fill.
    public init(record: (inout Recording) -> Void) {
        var recording = Recording()
        record(&recording)
        self.init(recording: recording)
    }

    /// A record of `recording`.
    public init(recording: Recording) {
        self.recording = recording
    }

    /// A record of `output` followed by `completion`.
    public init(output: [Output], completion: Subscribers.Completion<Failure>) {
        self.init(recording: Recording(output: output, completion: completion))
    }

    /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        guard !recording.output.isEmpty else {
            subscriber.receive(subscription: Subscriptions.empty)
            subscriber.receive(completion: recording.completion)
            return
        }
        subscriber.receive(subscription: Inner(
            output: recording.output, completion: recording.completion, downstream: subscriber))
    }

    /// The values and the completion a ``Record`` replays, built value by value.
    public struct Recording {
        /// The type of the values recorded.
        public typealias Input = Output

        /// The values recorded, in order.
        public private(set) var output: [Output]
        /// The completion recorded (`finished` until one is received).
        public private(set) var completion: Subscribers.Completion<Failure>
        private var isComplete: Bool

        /// An empty recording, open for values.
        public init() {
            output = []
            completion = .finished
            isComplete = false
        }

        /// A complete recording of `output` followed by `completion`.
        public init(output: [Output], completion: Subscribers.Completion<Failure> = .finished) {
            self.output = output
            self.completion = completion
            isComplete = true
        }

        /// Appends a value. The recording must not be complete.
        public mutating func receive(_ input: Input) {
            precondition(!isComplete, "Receiving values after completion is not allowed")
            output.append(input)
        }

        /// Records the completion. It may be recorded only once.
        public mutating func receive(completion: Subscribers.Completion<Failure>) {
            precondition(!isComplete, "Receiving completion more than once is not allowed")
            self.completion = completion
            isComplete = true
        }
    }

    private final class Inner<Downstream: Subscriber>: Subscription
    where Downstream.Input == Output, Downstream.Failure == Failure {
        private let output: [Output]
        private var index = 0
        private let completion: Subscribers.Completion<Failure>
        private var downstream: Downstream?
        private var demand = Subscribers.Demand.none
        private var emitting = false

        init(output: [Output], completion: Subscribers.Completion<Failure>, downstream: Downstream) {
            self.output = output
            self.completion = completion
            self.downstream = downstream
        }

        func request(_ demand: Subscribers.Demand) {
            guard downstream != nil else { return }
            self.demand += demand
            guard !emitting else { return }
            emitting = true
            defer { emitting = false }
            while let downstream, self.demand > 0, index < output.count {
                self.demand -= 1
                let value = output[index]
                index += 1
                let more = downstream.receive(value)
                if more > 0 { self.demand += more }
                if index == output.count, let finishing = self.downstream.take() {
                    finishing.receive(completion: completion)
                    return
                }
            }
        }

        func cancel() {
            downstream = nil
        }
    }
}

extension Record.Recording: Equatable where Output: Equatable, Failure: Equatable {}
extension Record: Equatable where Output: Equatable, Failure: Equatable {}
