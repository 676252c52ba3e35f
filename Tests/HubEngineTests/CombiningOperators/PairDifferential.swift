import HubEngine
import HubTesting
import OpenCombine

/// One step of a scripted exchange with two sources, `a` and `b`.
enum PairStep: Equatable, DifferentialStep {
    case sendA(Int), sendB(Int)
    case finishA, finishB
    case failA, failB
    /// The downstream requests more (`nil` for unlimited). Never zero.
    case request(Int?)
    case cancel

    var downstream: DownstreamAction? {
        switch self {
        case .request(let n): return .request(n)
        case .cancel: return .cancel
        default: return nil
        }
    }

    var description: String {
        switch self {
        case .sendA(let v): return "a.send(\(v))"
        case .sendB(let v): return "b.send(\(v))"
        case .finishA: return "a.finish"
        case .finishB: return "b.finish"
        case .failA: return "a.fail"
        case .failB: return "b.fail"
        case .request(let n): return "request(\(n.map(String.init) ?? "unlimited"))"
        case .cancel: return "cancel"
        }
    }
}

/// Two-source scripts through the one harness: each side's chain is built on two
/// `PassthroughSubject<Int, TestError>` of its own library, `a` and `b`.
enum PairDifferential {
    typealias History<Out: Equatable> = [RecordedEvent<Out, TestError>]
    typealias HubPair = (HubEngine.PassthroughSubject<Int, TestError>, HubEngine.PassthroughSubject<Int, TestError>)
    typealias OCPair = (OpenCombine.PassthroughSubject<Int, TestError>, OpenCombine.PassthroughSubject<Int, TestError>)

    static func run<Out: Equatable, HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
        _ script: [PairStep],
        initialDemand: Int? = 0,
        demandPerValue: Int = 0,
        hub: (HubEngine.PassthroughSubject<Int, TestError>, HubEngine.PassthroughSubject<Int, TestError>) -> HP,
        oc: (OpenCombine.PassthroughSubject<Int, TestError>, OpenCombine.PassthroughSubject<Int, TestError>) -> OP
    ) -> (hub: History<Out>, oc: History<Out>)
    where HP.Output == Out, HP.Failure == TestError, OP.Output == Out, OP.Failure == TestError {
        Differential.run(
            script, initialDemand: initialDemand, demandPerValue: demandPerValue,
            hubSources: (HubEngine.PassthroughSubject<Int, TestError>(), HubEngine.PassthroughSubject<Int, TestError>()),
            ocSources: (OpenCombine.PassthroughSubject<Int, TestError>(), OpenCombine.PassthroughSubject<Int, TestError>()),
            hub: { hub($0.0, $0.1) }, oc: { oc($0.0, $0.1) },
            play: { step, hub, oc in
                switch step {
                case .sendA(let v): hub.0.send(v); oc.0.send(v)
                case .sendB(let v): hub.1.send(v); oc.1.send(v)
                case .finishA: hub.0.send(completion: .finished); oc.0.send(completion: .finished)
                case .finishB: hub.1.send(completion: .finished); oc.1.send(completion: .finished)
                case .failA: hub.0.send(completion: .failure(.oops)); oc.0.send(completion: .failure(.oops))
                case .failB: hub.1.send(completion: .failure(.other(2))); oc.1.send(completion: .failure(.other(2)))
                case .request, .cancel: break
                }
            })
    }

    /// A random valid script: values 0...9 on either source, requests of 1...3 or unlimited,
    /// sometimes a completion of either source or a cancel. Deterministic for a given generator.
    static func randomScript<G: RandomNumberGenerator>(length: Int, using generator: inout G) -> [PairStep] {
        (0..<length).map { _ in
            let value = Int.random(in: 0...9, using: &generator)
            switch Int.random(in: 0..<100, using: &generator) {
            case 0..<30: return .sendA(value)
            case 30..<60: return .sendB(value)
            case 60..<82:
                return .request(Int.random(in: 0..<8, using: &generator) == 0 ? nil : Int.random(in: 1...3, using: &generator))
            case 82..<86: return .finishA
            case 86..<90: return .finishB
            case 90..<93: return .failA
            case 93..<96: return .failB
            default: return .cancel
            }
        }
    }

    /// A random initial demand (none, 1, 2 or unlimited) and demand per value (0 or 1).
    static func randomDemands<G: RandomNumberGenerator>(using generator: inout G) -> (initial: Int?, perValue: Int) {
        ([0, 1, 2, nil].randomElement(using: &generator)!, Int.random(in: 0...1, using: &generator))
    }
}

extension Array {
    /// The history up to and including its first terminal event.
    ///
    /// OpenCombine 0.14's `DropUntilOutput` can deliver a second completion (when the
    /// trigger completes after the upstream did); HubEngine never does, so OpenCombine's
    /// histories are compared up to their first terminal event, and HubEngine's are
    /// checked separately to end there.
    func upToFirstTerminal<V, F>() -> [RecordedEvent<V, F>] where Element == RecordedEvent<V, F> {
        guard let end = firstIndex(where: \.isTerminal) else { return self }
        return Array(self[...end])
    }
}

extension RecordedEvent {
    /// Whether this is `.finished` or `.failure`.
    var isTerminal: Bool {
        switch self {
        case .finished, .failure: return true
        case .subscription, .value: return false
        }
    }
}

/// Checks the subscriber contract on a history: one subscription first, at most one
/// terminal event and nothing after it.
func contractViolations<V, F>(_ events: [RecordedEvent<V, F>]) -> [String] {
    var problems: [String] = []
    if events.first != .subscription { problems.append("no subscription first") }
    if events.dropFirst().contains(.subscription) { problems.append("second subscription") }
    if let end = events.firstIndex(where: \.isTerminal), end != events.count - 1 {
        problems.append("events after the terminal event")
    }
    return problems
}
