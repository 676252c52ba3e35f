import HubEngine
import HubTesting
import HubValue
import OpenCombine

/// One step of a scripted exchange: what the source sends and what the downstream does.
enum ScriptStep<Value: Equatable>: Equatable, CustomStringConvertible {
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

/// Runs the same scripted exchange on a HubEngine chain and on an OpenCombine chain, each fed by a
/// `PassthroughSubject<Int, TestError>` of its own library, and returns both histories.
///
/// `hub` and `oc` build the chain under test from the source subject. The
/// downstream starts with `initialDemand` and returns `demandPerValue` from
/// each value.
enum Differential {
    typealias History<Out: Equatable> = [RecordedEvent<Out, TestError>]

    static func run<Out: Equatable, HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
        _ script: [ScriptStep<Int>],
        initialDemand: Int? = 0,
        demandPerValue: Int = 0,
        hub: (HubEngine.PassthroughSubject<Int, TestError>) -> HP,
        oc: (OpenCombine.PassthroughSubject<Int, TestError>) -> OP
    ) -> (hub: History<Out>, oc: History<Out>)
    where HP.Output == Out, HP.Failure == TestError, OP.Output == Out, OP.Failure == TestError {
        // HubEngine side.
        let hubSubject = HubEngine.PassthroughSubject<Int, TestError>()
        let hubRecorder = RecordingSubscriber<Out, TestError>(
            initialDemand: hubDemand(initialDemand), demandPerValue: .max(demandPerValue))
        hub(hubSubject).subscribe(hubRecorder)
        // OpenCombine side.
        let ocSubject = OpenCombine.PassthroughSubject<Int, TestError>()
        let ocRecorder = OCRecordingSubscriber<Out, TestError>(
            initialDemand: ocDemand(initialDemand), demandPerValue: .max(demandPerValue))
        oc(ocSubject).subscribe(ocRecorder)

        for step in script {
            apply(step, hubSubject: hubSubject, ocSubject: ocSubject, hubRecorder: hubRecorder, ocRecorder: ocRecorder)
        }
        return (hubRecorder.events, ocRecorder.events)
    }

    /// Plays one step on both sides: the source subjects send or complete, or the recorders
    /// request or cancel. Shared by ``run(_:initialDemand:demandPerValue:hub:oc:)``, the
    /// step-by-step comparisons and the higher-order drivers (whose source subject may not
    /// exist yet: a `nil` subject ignores the step).
    static func apply<Out: Equatable>(
        _ step: ScriptStep<Int>,
        hubSubject: HubEngine.PassthroughSubject<Int, TestError>?,
        ocSubject: OpenCombine.PassthroughSubject<Int, TestError>?,
        hubRecorder: RecordingSubscriber<Out, TestError>,
        ocRecorder: OCRecordingSubscriber<Out, TestError>
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
        case .request(let n):
            hubRecorder.request(hubDemand(n))
            ocRecorder.request(ocDemand(n))
        case .cancel:
            hubRecorder.cancel()
            ocRecorder.cancel()
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
