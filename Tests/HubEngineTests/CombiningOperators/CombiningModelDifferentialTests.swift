import Testing
import HubEngine
import HubTesting
import OpenCombine

/// `merge` and `combineLatest` against their reference models (OpenCombine has neither),
/// through the one differential harness: random two-subject scripts, with inputs that
/// complete, fail or send while they are being subscribed placed around the subjects, and
/// with values sent back into a subject from inside the downstream's `receive(_:)`.
@Suite("CombiningOperators: merge and combineLatest against reference models")
struct CombiningModelDifferentialTests {
    /// An input that does everything while being subscribed.
    enum SynchronousInput: CaseIterable, CustomStringConvertible {
        case empty, just, fail, sequence

        var description: String {
            switch self {
            case .empty: return "empty"
            case .just: return "just(50)"
            case .fail: return "fail"
            case .sequence: return "sequence([60, 61])"
            }
        }

        var hub: HubEngine.AnyPublisher<Int, TestError> {
            switch self {
            case .empty: return HubEngine.Empty<Int, TestError>().eraseToAnyPublisher()
            case .just: return HubEngine.Just(50).setFailureType(to: TestError.self).eraseToAnyPublisher()
            case .fail: return HubEngine.Fail<Int, TestError>(error: .other(9)).eraseToAnyPublisher()
            case .sequence: return HubEngine.Publishers.Sequence<[Int], TestError>(sequence: [60, 61]).eraseToAnyPublisher()
            }
        }

        var oc: OpenCombine.AnyPublisher<Int, TestError> {
            switch self {
            case .empty: return OpenCombine.Empty<Int, TestError>().eraseToAnyPublisher()
            case .just: return OpenCombine.Just(50).setFailureType(to: TestError.self).eraseToAnyPublisher()
            case .fail: return OpenCombine.Fail<Int, TestError>(error: .other(9)).eraseToAnyPublisher()
            case .sequence: return OpenCombine.Publishers.Sequence<[Int], TestError>(sequence: [60, 61]).eraseToAnyPublisher()
            }
        }
    }

    /// Where the subjects `a`, `b` and the synchronous inputs go, in input order.
    enum Slot: CustomStringConvertible {
        case a, b, sync(SynchronousInput)
        var description: String {
            switch self {
            case .a: return "a"
            case .b: return "b"
            case .sync(let input): return "\(input)"
            }
        }
    }

    static func randomLayout<G: RandomNumberGenerator>(maxSync: Int, allowFail: Bool, using g: inout G) -> [Slot] {
        var slots: [Slot] = [.a, .b]
        for _ in 0..<Int.random(in: 0...maxSync, using: &g) {
            var kinds = SynchronousInput.allCases
            if !allowFail || Int.random(in: 0..<4, using: &g) != 0 { kinds.removeAll { $0 == .fail } }
            slots.insert(.sync(kinds.randomElement(using: &g)!), at: Int.random(in: 0...slots.count, using: &g))
        }
        return slots
    }

    static func hubInputs(_ layout: [Slot], _ a: HubEngine.PassthroughSubject<Int, TestError>,
                          _ b: HubEngine.PassthroughSubject<Int, TestError>) -> [HubEngine.AnyPublisher<Int, TestError>] {
        layout.map {
            switch $0 {
            case .a: return a.eraseToAnyPublisher()
            case .b: return b.eraseToAnyPublisher()
            case .sync(let input): return input.hub
            }
        }
    }

    static func ocInputs(_ layout: [Slot], _ a: OpenCombine.PassthroughSubject<Int, TestError>,
                         _ b: OpenCombine.PassthroughSubject<Int, TestError>) -> [OpenCombine.AnyPublisher<Int, TestError>] {
        layout.map {
            switch $0 {
            case .a: return a.eraseToAnyPublisher()
            case .b: return b.eraseToAnyPublisher()
            case .sync(let input): return input.oc
            }
        }
    }

    /// The engine's combineLatest of 2, 3 or 4 inputs, as arrays.
    static func hubCombineLatest(_ p: [HubEngine.AnyPublisher<Int, TestError>]) -> HubEngine.AnyPublisher<[Int], TestError> {
        switch p.count {
        case 2: return p[0].combineLatest(p[1]).map { [$0.0, $0.1] }.eraseToAnyPublisher()
        case 3: return p[0].combineLatest(p[1], p[2]).map { [$0.0, $0.1, $0.2] }.eraseToAnyPublisher()
        default: return p[0].combineLatest(p[1], p[2], p[3]).map { [$0.0, $0.1, $0.2, $0.3] }.eraseToAnyPublisher()
        }
    }

    @Test(arguments: 0..<300)
    func mergeMatchesItsModel(seed: Int) {
        var g = SeededGenerator(seed: UInt64(seed) &+ 101)
        let layout = Self.randomLayout(maxSync: 3, allowFail: true, using: &g)
        let script = PairDifferential.randomScript(length: 24, using: &g)
        let (initial, perValue) = PairDifferential.randomDemands(using: &g)
        let result = PairDifferential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { a, b in HubEngine.Publishers.MergeMany(Self.hubInputs(layout, a, b)) },
            oc: { a, b in ReferenceModel.Merge(inputs: Self.ocInputs(layout, a, b)) })
        #expect(result.hub == result.oc, "seed \(seed): merge\(layout), demand \(String(describing: initial))/\(perValue): \(script)")
    }

    @Test(arguments: 0..<300)
    func combineLatestMatchesItsModel(seed: Int) {
        var g = SeededGenerator(seed: UInt64(seed) &+ 202)
        let layout = Self.randomLayout(maxSync: 2, allowFail: true, using: &g)
        let script = PairDifferential.randomScript(length: 24, using: &g)
        let (initial, perValue) = PairDifferential.randomDemands(using: &g)
        let result = PairDifferential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { a, b in Self.hubCombineLatest(Self.hubInputs(layout, a, b)) },
            oc: { a, b in ReferenceModel.CombineLatest(inputs: Self.ocInputs(layout, a, b)) })
        #expect(result.hub == result.oc, "seed \(seed): combineLatest\(layout), demand \(String(describing: initial))/\(perValue): \(script)")
    }

    /// Values sent into `a` from inside the downstream's `receive(_:)` (each value below 100
    /// that is a multiple of 3 sends itself plus 100), on both sides, with random scripts.
    @Test(arguments: 0..<200)
    func reentrantSendsMatchTheModels(seed: Int) {
        var g = SeededGenerator(seed: UInt64(seed) &+ 303)
        let layout = Self.randomLayout(maxSync: 1, allowFail: false, using: &g)
        let script = PairDifferential.randomScript(length: 24, using: &g)
        let (initial, perValue) = PairDifferential.randomDemands(using: &g)
        let isMerge = seed % 2 == 0

        func trigger(_ value: Int) -> Int? { value < 100 && value % 3 == 0 ? value + 100 : nil }

        let hubA = HubEngine.PassthroughSubject<Int, TestError>(), hubB = HubEngine.PassthroughSubject<Int, TestError>()
        let ocA = OpenCombine.PassthroughSubject<Int, TestError>(), ocB = OpenCombine.PassthroughSubject<Int, TestError>()
        let description = "seed \(seed): \(isMerge ? "merge" : "combineLatest")\(layout), demand \(String(describing: initial))/\(perValue): \(script)"
        if isMerge {
            let run = DifferentialRun<Int, TestError>(initialDemand: initial, demandPerValue: perValue)
            run.hub.onValue = { value in
                if let next = trigger(value) { hubA.send(next) }
                return .max(perValue)
            }
            run.oc.onValue = { value in
                if let next = trigger(value) { ocA.send(next) }
                return .max(perValue)
            }
            run.attach(hub: HubEngine.Publishers.MergeMany(Self.hubInputs(layout, hubA, hubB)),
                       oc: ReferenceModel.Merge(inputs: Self.ocInputs(layout, ocA, ocB)))
            Self.play(script, run, hubA, hubB, ocA, ocB)
            #expect(run.agree, "\(description)\nhub: \(run.histories.hub)\noc:  \(run.histories.oc)")
        } else {
            let run = DifferentialRun<[Int], TestError>(initialDemand: initial, demandPerValue: perValue)
            run.hub.onValue = { array in
                if let next = trigger(array[0]) { hubA.send(next) }
                return .max(perValue)
            }
            run.oc.onValue = { array in
                if let next = trigger(array[0]) { ocA.send(next) }
                return .max(perValue)
            }
            run.attach(hub: Self.hubCombineLatest(Self.hubInputs(layout, hubA, hubB)),
                       oc: ReferenceModel.CombineLatest(inputs: Self.ocInputs(layout, ocA, ocB)))
            Self.play(script, run, hubA, hubB, ocA, ocB)
            #expect(run.agree, "\(description)\nhub: \(run.histories.hub)\noc:  \(run.histories.oc)")
        }
    }

    private static func play<Out>(
        _ script: [PairStep], _ run: DifferentialRun<Out, TestError>,
        _ hubA: HubEngine.PassthroughSubject<Int, TestError>, _ hubB: HubEngine.PassthroughSubject<Int, TestError>,
        _ ocA: OpenCombine.PassthroughSubject<Int, TestError>, _ ocB: OpenCombine.PassthroughSubject<Int, TestError>
    ) {
        for step in script {
            switch step {
            case .sendA(let v): hubA.send(v); ocA.send(v)
            case .sendB(let v): hubB.send(v); ocB.send(v)
            case .finishA: hubA.send(completion: .finished); ocA.send(completion: .finished)
            case .finishB: hubB.send(completion: .finished); ocB.send(completion: .finished)
            case .failA: hubA.send(completion: .failure(.oops)); ocA.send(completion: .failure(.oops))
            case .failB: hubB.send(completion: .failure(.other(2))); ocB.send(completion: .failure(.other(2)))
            case .request(let n): run.play(.request(n))
            case .cancel: run.play(.cancel)
            }
        }
    }
}
