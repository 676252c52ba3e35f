import HubEngine
import HubTesting
import HubValue

/// One step of a scenario played on an operator under test.
enum ScenarioStep<Input> {
    /// The upstream sends a value.
    case send(Input)
    /// Virtual time moves on.
    case advance(Duration)
    /// The downstream asks for more.
    case request(Int)
    /// The upstream finishes.
    case finish
}

/// What the downstream saw at a virtual time (nanoseconds after the cut).
struct TimedEvent<Output: Equatable>: Equatable, CustomStringConvertible {
    let at: Int64
    let event: RecordedEvent<Output, TestError>

    var description: String { "@\(at / 1_000_000)ms \(event)" }
}

/// What one run of a scenario after its cut looked like: the downstream's events and,
/// after each step, how much the upstream had been asked for and not yet sent.
struct ScenarioOutcome<Output: Equatable>: Equatable {
    var events: [TimedEvent<Output>] = []
    var outstanding: [Subscribers.Demand] = []
}

/// Plays `steps` on an operator built by `build` twice: once without interruption, and
/// once cut at `cut` (the registry's snapshot written to JSON and read back, the
/// subscription cancelled, a new instance built restoring it on a new scheduler whose
/// clock starts at the cut, its downstream asking for the demand the first one had
/// outstanding there). Returns both outcomes after the cut, which must be equal event
/// for event (times included) and demand for demand, and the snapshot.
///
/// The downstream asks for `initialDemand` when subscribed and answers each value with
/// `perValue`.
struct RestoreScenario<Input, Output: Equatable> {
    typealias Build = (_ upstream: DemandProbe<Input, TestError>, _ scheduler: TestScheduler, _ registry: CheckpointRegistry)
        -> AnyPublisher<Output, TestError>

    let build: Build
    let initialDemand: Subscribers.Demand
    let perValue: Subscribers.Demand

    init(initialDemand: Subscribers.Demand = .unlimited, perValue: Subscribers.Demand = .none, build: @escaping Build) {
        self.build = build
        self.initialDemand = initialDemand
        self.perValue = perValue
    }

    struct Result {
        var uninterrupted = ScenarioOutcome<Output>()
        var restored = ScenarioOutcome<Output>()
        var snapshot: [String: Value] = [:]
        var failures: [CheckpointError] = []
    }

    func run(_ steps: [ScenarioStep<Input>], cut: Int) -> Result {
        var result = Result()

        // The uninterrupted run, snapshotted at the cut.
        let schedulerA = TestScheduler()
        let registryA = CheckpointRegistry()
        let upstreamA = Upstream<Input>()
        let outA = Downstream<Output>(scheduler: schedulerA, initialDemand: initialDemand, perValue: perValue)
        build(upstreamA.probe, schedulerA, registryA).subscribe(outA.recorder)
        var cutTime = SchedulerTime.zero
        for (index, step) in steps.enumerated() {
            if index == cut {
                result.snapshot = Self.roundTrip(registryA.snapshot())
                cutTime = schedulerA.now
                outA.startRecording(from: cutTime)
            }
            apply(step, upstreamA, outA, schedulerA)
            if index >= cut { result.uninterrupted.outstanding.append(upstreamA.outstanding) }
        }
        result.uninterrupted.events = outA.timed

        // The restored run: a new instance, new scheduler, the downstream's outstanding demand.
        let schedulerB = TestScheduler()
        let registryB = CheckpointRegistry(restoring: result.snapshot)
        let upstreamB = Upstream<Input>()
        let outB = Downstream<Output>(scheduler: schedulerB, initialDemand: outA.outstandingAtCut, perValue: perValue)
        outB.startRecording(from: .zero)
        build(upstreamB.probe, schedulerB, registryB).subscribe(outB.recorder)
        // The new subscription is not an event of the uninterrupted run.
        outB.dropSubscription()
        for step in steps[cut...] {
            apply(step, upstreamB, outB, schedulerB)
            result.restored.outstanding.append(upstreamB.outstanding)
        }
        result.restored.events = outB.timed
        result.failures = registryB.failures
        _ = cutTime
        return result
    }

    private func apply(_ step: ScenarioStep<Input>, _ upstream: Upstream<Input>, _ out: Downstream<Output>, _ scheduler: TestScheduler) {
        switch step {
        case .send(let value): upstream.send(value)
        case .advance(let interval): scheduler.advance(by: interval)
        case .request(let n): out.request(n)
        case .finish: upstream.probe.send(completion: .finished)
        }
    }

    /// The snapshot as it would come back from a store: written to JSON and read back.
    static func roundTrip(_ states: [String: Value]) -> [String: Value] {
        let text = Value.object(Value.Object(uniqueKeysWithValues: states.sorted { $0.key < $1.key })).jsonString()
        guard case let .object(read)? = try? Value.parse(text) else { return [:] }
        return Dictionary(uniqueKeysWithValues: read.map { ($0.key, $0.value) })
    }
}

/// The upstream of a scenario: a demand probe that also counts what it sent and the
/// demand its values were answered with.
final class Upstream<Input> {
    let probe = DemandProbe<Input, TestError>()
    private var returned = Subscribers.Demand.none
    private var sent = 0

    func send(_ value: Input) {
        sent += 1
        returned += probe.send(value)
    }

    /// Asked for and not yet sent.
    var outstanding: Subscribers.Demand {
        let asked = probe.totalDemand + returned
        guard let max = asked.max else { return .unlimited }
        return .max(Swift.max(0, max - sent))
    }
}

/// The downstream of a scenario: records events with their times from a start, and
/// keeps count of the demand it has outstanding.
final class Downstream<Output: Equatable> {
    let recorder: RecordingSubscriber<Output, TestError>
    private let scheduler: TestScheduler
    private var start: SchedulerTime?
    private var recordedFrom = 0
    private(set) var timed: [TimedEvent<Output>] = []
    private var asked: Subscribers.Demand
    private var received = 0
    private var askedAtCut = Subscribers.Demand.none
    private var receivedAtCut = 0

    init(scheduler: TestScheduler, initialDemand: Subscribers.Demand, perValue: Subscribers.Demand) {
        self.scheduler = scheduler
        recorder = RecordingSubscriber(initialDemand: initialDemand, demandPerValue: perValue)
        asked = initialDemand
        recorder.onValue = { [unowned self] value in
            self.received += 1
            self.asked += perValue
            self.note()
            return perValue
        }
        recorder.onCompletion = { [unowned self] in self.note() }
    }

    func request(_ n: Int) {
        asked += .max(n)
        recorder.request(.max(n))
    }

    func startRecording(from time: SchedulerTime) {
        start = time
        recordedFrom = recorder.events.count
        askedAtCut = asked
        receivedAtCut = received
    }

    /// What it had asked for and not received when recording started.
    var outstandingAtCut: Subscribers.Demand {
        guard let max = askedAtCut.max else { return .unlimited }
        return .max(Swift.max(0, max - receivedAtCut))
    }

    func dropSubscription() {
        recordedFrom = recorder.events.count
        timed = []
    }

    private func note() {
        guard let start else { return }
        let events = recorder.events
        while recordedFrom < events.count {
            timed.append(TimedEvent(at: scheduler.now.nanoseconds - start.nanoseconds, event: events[recordedFrom]))
            recordedFrom += 1
        }
    }
}
