import HubEngine
import HubTesting
import HubValue

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

/// A subscriber that records each event with the virtual time at which it arrived: a
/// ``RecordingSubscriber`` (history, initial and per-value demand) whose events are stamped
/// with the scheduler's time on arrival.
final class TimelineRecorder<Input: Equatable>: Subscriber, Cancellable, RecordingFront {
    typealias Failure = TestError

    private let scheduler: TestScheduler
    /// The recorder that keeps the history and grants the demand.
    let recording: RecordingSubscriber<Input, TestError>
    /// The arrival time (ms) of each event of `recording`, stamped before it is recorded,
    /// so that an event delivered reentrantly from `onValue` keeps its place.
    private var arrivals: [Int64] = []

    /// Every event with its arrival time, in order.
    var timeline: [Stamped<Input>] { zip(arrivals, recording.events).map { .at($0, $1) } }

    init(scheduler: TestScheduler, initialDemand: Subscribers.Demand = .unlimited, demandPerValue: Subscribers.Demand = .none) {
        self.scheduler = scheduler
        recording = RecordingSubscriber(initialDemand: initialDemand, demandPerValue: demandPerValue)
    }

    private func stamp() {
        arrivals.append(VirtualTime.inMilliseconds(scheduler.now))
    }

    func receive(subscription: any Subscription) {
        stamp()
        recording.receive(subscription: subscription)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        stamp()
        return recording.receive(input)
    }

    func receive(completion: Subscribers.Completion<TestError>) {
        stamp()
        recording.receive(completion: completion)
    }
}
