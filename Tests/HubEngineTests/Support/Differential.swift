import HubEngine
import HubTesting
import HubValue
import OpenCombine

/// One step of a scripted exchange: what the source sends and what the downstream does.
enum ScriptStep<Value: Equatable>: Equatable, DifferentialStep {
    /// The source subject sends a value.
    case send(Value)
    /// The source subject finishes.
    case finish
    /// The source subject fails with `TestError.oops`.
    case fail
    /// The downstream requests more values (`nil` for unlimited). Never zero.
    case request(Int?)
    /// The downstream cancels.
    case cancel

    var downstream: DownstreamAction? {
        switch self {
        case .request(let n): return .request(n)
        case .cancel: return .cancel
        case .send, .finish, .fail: return nil
        }
    }

    var description: String {
        switch self {
        case .send(let v): return "send(\(v))"
        case .finish: return "finish"
        case .fail: return "fail"
        case .request(let n): return "request(\(n.map(String.init) ?? "unlimited"))"
        case .cancel: return "cancel"
        }
    }
}

/// What the downstream does in a script step: the part every differential script shares.
enum DownstreamAction: Equatable {
    /// Requests more values (`nil` for unlimited). Never zero.
    case request(Int?)
    /// Cancels.
    case cancel
}

/// A step of a differential script. Each shape of script (one source, two sources, a source
/// and a signal, an outer and scripted inners) has its own step type for its sources; the
/// harness plays the downstream's steps itself.
protocol DifferentialStep: CustomStringConvertible {
    /// The downstream's action, or `nil` for a step of the sources.
    var downstream: DownstreamAction? { get }
}

/// The one differential harness: the same script played on a HubEngine chain and on its
/// OpenCombine twin, each ending in a recorder of its own library, with the same initial
/// demand and demand per value. Every differential test runs through it, either with
/// ``Differential/run(_:initialDemand:demandPerValue:hubSources:ocSources:hub:oc:play:)``
/// or, for drivers that hook the recorders (re-entrant scripts, step-by-step comparisons),
/// with a ``DifferentialRun`` directly.
final class DifferentialRun<Out: Equatable, Failure: Error & Equatable> {
    typealias History = [RecordedEvent<Out, Failure>]

    /// The HubEngine side's recorder.
    let hub: RecordingSubscriber<Out, Failure>
    /// The OpenCombine side's recorder.
    let oc: OCRecordingSubscriber<Out, Failure>

    init(initialDemand: Int?, demandPerValue: Int) {
        hub = RecordingSubscriber(
            initialDemand: Differential.hubDemand(initialDemand), demandPerValue: .max(demandPerValue))
        oc = OCRecordingSubscriber(
            initialDemand: Differential.ocDemand(initialDemand), demandPerValue: .max(demandPerValue))
    }

    /// Subscribes each recorder to its side's chain.
    func attach<HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(hub hubChain: HP, oc ocChain: OP)
    where HP.Output == Out, HP.Failure == Failure, OP.Output == Out, OP.Failure == Failure {
        hubChain.subscribe(hub)
        ocChain.subscribe(oc)
    }

    /// Plays the downstream's action on both recorders.
    func play(_ action: DownstreamAction) {
        switch action {
        case .request(let n):
            hub.request(Differential.hubDemand(n))
            oc.request(Differential.ocDemand(n))
        case .cancel:
            hub.cancel()
            oc.cancel()
        }
    }

    /// Both histories.
    var histories: (hub: History, oc: History) { (hub.events, oc.events) }

    /// Whether both sides recorded the same history.
    var agree: Bool { hub.events == oc.events }
}

/// Runs scripts through ``DifferentialRun``.
enum Differential {
    typealias History<Out: Equatable> = [RecordedEvent<Out, TestError>]

    /// Runs `script`: the downstream's steps on the recorders, the others with `play` on
    /// both sides' sources (`hubSources`/`ocSources`, which `hub`/`oc` build the chains from).
    static func run<Step: DifferentialStep, HS, OS, Out: Equatable, HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
        _ script: [Step],
        initialDemand: Int? = 0,
        demandPerValue: Int = 0,
        hubSources: HS,
        ocSources: OS,
        hub: (HS) -> HP,
        oc: (OS) -> OP,
        play: (Step, HS, OS) -> Void
    ) -> (hub: History<Out>, oc: History<Out>)
    where HP.Output == Out, HP.Failure == TestError, OP.Output == Out, OP.Failure == TestError {
        let run = DifferentialRun<Out, TestError>(initialDemand: initialDemand, demandPerValue: demandPerValue)
        run.attach(hub: hub(hubSources), oc: oc(ocSources))
        for step in script {
            if let action = step.downstream { run.play(action) } else { play(step, hubSources, ocSources) }
        }
        return run.histories
    }

    /// One source: each side's chain is built on a `PassthroughSubject<Int, TestError>` of
    /// its own library.
    static func run<Out: Equatable, HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
        _ script: [ScriptStep<Int>],
        initialDemand: Int? = 0,
        demandPerValue: Int = 0,
        hub: (HubEngine.PassthroughSubject<Int, TestError>) -> HP,
        oc: (OpenCombine.PassthroughSubject<Int, TestError>) -> OP
    ) -> (hub: History<Out>, oc: History<Out>)
    where HP.Output == Out, HP.Failure == TestError, OP.Output == Out, OP.Failure == TestError {
        run(
            script, initialDemand: initialDemand, demandPerValue: demandPerValue,
            hubSources: HubEngine.PassthroughSubject<Int, TestError>(),
            ocSources: OpenCombine.PassthroughSubject<Int, TestError>(),
            hub: hub, oc: oc, play: { step, hubSubject, ocSubject in
                playSource(step, hubSubject: hubSubject, ocSubject: ocSubject)
            })
    }

    /// Plays a source step of a one-source script on both subjects (a `nil` subject, a source
    /// not made yet, ignores it).
    static func playSource(
        _ step: ScriptStep<Int>,
        hubSubject: HubEngine.PassthroughSubject<Int, TestError>?,
        ocSubject: OpenCombine.PassthroughSubject<Int, TestError>?
    ) {
        switch step {
        case .send(let v):
            hubSubject?.send(v)
            ocSubject?.send(v)
        case .finish:
            hubSubject?.send(completion: .finished)
            ocSubject?.send(completion: .finished)
        case .fail:
            hubSubject?.send(completion: .failure(.oops))
            ocSubject?.send(completion: .failure(.oops))
        case .request, .cancel:
            break
        }
    }

    static func hubDemand(_ n: Int?) -> HubEngine.Subscribers.Demand { n.map { .max($0) } ?? .unlimited }
    static func ocDemand(_ n: Int?) -> OpenCombine.Subscribers.Demand { n.map { .max($0) } ?? .unlimited }

    /// A random valid script: values in `values`, requests of 1...3 or unlimited, at most one
    /// terminal event, sometimes a cancel. Deterministic for a given generator.
    static func randomScript<G: RandomNumberGenerator>(
        length: Int, values: ClosedRange<Int> = 0...9, using generator: inout G
    ) -> [ScriptStep<Int>] {
        var steps: [ScriptStep<Int>] = []
        for _ in 0..<length {
            let roll = Int.random(in: 0..<100, using: &generator)
            switch roll {
            case 0..<55: steps.append(.send(Int.random(in: values, using: &generator)))
            case 55..<85: steps.append(.request(Int.random(in: 0..<8, using: &generator) == 0 ? nil : Int.random(in: 1...3, using: &generator)))
            case 85..<90: steps.append(.cancel)
            case 90..<95: steps.append(.finish)
            default: steps.append(.fail)
            }
        }
        return steps
    }
}

/// The OpenCombine twin of ``RecordingSubscriber``: records the same ``RecordedEvent`` history.
final class OCRecordingSubscriber<Input: Equatable, Failure: Error & Equatable>: OpenCombine.Subscriber, OpenCombine.Cancellable {
    private(set) var events: [RecordedEvent<Input, Failure>] = []
    private var subscription: (any OpenCombine.Subscription)?
    private let initialDemand: OpenCombine.Subscribers.Demand
    var demandPerValue: OpenCombine.Subscribers.Demand
    var onValue: ((Input) -> OpenCombine.Subscribers.Demand)?

    init(initialDemand: OpenCombine.Subscribers.Demand = .none, demandPerValue: OpenCombine.Subscribers.Demand = .none) {
        self.initialDemand = initialDemand
        self.demandPerValue = demandPerValue
    }

    var values: [Input] {
        events.compactMap { if case .value(let value) = $0 { return value } else { return nil } }
    }

    func receive(subscription: any OpenCombine.Subscription) {
        self.subscription = subscription
        events.append(.subscription)
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    func receive(_ input: Input) -> OpenCombine.Subscribers.Demand {
        events.append(.value(input))
        if let onValue { return onValue(input) }
        return demandPerValue
    }

    func receive(completion: OpenCombine.Subscribers.Completion<Failure>) {
        switch completion {
        case .finished: events.append(.finished)
        case .failure(let error): events.append(.failure(error))
        }
    }

    /// Requests more; zero demands are skipped because OpenCombine traps on them.
    func request(_ demand: OpenCombine.Subscribers.Demand) {
        guard demand > 0 else { return }
        subscription?.request(demand)
    }

    func cancel() { subscription?.cancel() }
}
