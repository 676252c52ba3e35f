import HubCore

/// Virtual-time helpers for the timing tests: times are written in milliseconds.
enum VirtualTime {
    /// The scheduler time `ms` milliseconds after zero.
    static func ms(_ ms: Int64) -> SchedulerTime { SchedulerTime(nanoseconds: ms * 1_000_000) }
    /// A time in whole milliseconds.
    static func inMilliseconds(_ time: SchedulerTime) -> Int64 { time.nanoseconds / 1_000_000 }
}

/// One event of a timeline with the virtual time (in ms) at which it was received.
struct Stamped<Value: Equatable>: Equatable, CustomStringConvertible {
    let ms: Int64
    let event: RecordedEvent<Value, TestError>

    static func at(_ ms: Int64, _ event: RecordedEvent<Value, TestError>) -> Stamped { Stamped(ms: ms, event: event) }

    var description: String { "\(event)@\(ms)" }
}

extension TestScheduler {
    /// Queues `action` at `ms` milliseconds (a step of a marble script).
    func at(_ ms: Int64, _ action: @escaping () -> Void) {
        schedule(after: VirtualTime.ms(ms), action)
    }
}

/// A subscriber that records each event with the virtual time at which it arrived.
final class TimelineRecorder<Input: Equatable>: Subscriber, Cancellable {
    typealias Failure = TestError

    private let scheduler: TestScheduler
    private(set) var timeline: [Stamped<Input>] = []
    private(set) var subscription: (any Subscription)?
    private let initialDemand: Subscribers.Demand
    var demandPerValue: Subscribers.Demand
    /// Called on each value; its result replaces `demandPerValue` when set.
    var onValue: ((Input) -> Subscribers.Demand)?

    init(scheduler: TestScheduler, initialDemand: Subscribers.Demand = .unlimited, demandPerValue: Subscribers.Demand = .none) {
        self.scheduler = scheduler
        self.initialDemand = initialDemand
        self.demandPerValue = demandPerValue
    }

    private func record(_ event: RecordedEvent<Input, TestError>) {
        timeline.append(.at(VirtualTime.inMilliseconds(scheduler.now), event))
    }

    func receive(subscription: any Subscription) {
        self.subscription = subscription
        record(.subscription)
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        record(.value(input))
        if let onValue { return onValue(input) }
        return demandPerValue
    }

    func receive(completion: Subscribers.Completion<TestError>) {
        switch completion {
        case .finished: record(.finished)
        case .failure(let error): record(.failure(error))
        }
    }

    func request(_ demand: Subscribers.Demand) { subscription?.request(demand) }
    func cancel() { subscription?.cancel() }
}
