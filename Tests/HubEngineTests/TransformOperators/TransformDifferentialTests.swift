import Testing
import HubEngine
import HubTesting
import OpenCombine

/// A value with three fields, for the key-path `map`s.
private struct Triple: Equatable {
    var a: Int
    var b: Int
    var c: String
}

/// The error the try-variants' closures throw in these tests.
private func thrown(_ value: Int) -> TestError { .other(value) }

/// A compactMap transform that drops `value` (named to keep the type checker fast).
private func dropping(_ value: Int) -> (Int) -> Int? { { $0 == value ? nil : $0 } }

/// Runs one random script on a HubEngine chain and on its OpenCombine twin and compares the histories
/// after every step.
///
/// Two normalisations, both about OpenCombine breaking the contract HubEngine keeps:
/// - requests after a `cancel` are dropped from the script: OpenCombine's `ReduceProducer`,
///   `ReplaceEmpty` and `ReplaceError` still deliver a held result on a request made after the
///   downstream cancelled (HubEngine delivers nothing after cancel; unit tests check that);
/// - OpenCombine's history is cut after its first completion: its `ReplaceEmpty`/`ReplaceError`
///   deliver the held value and `.finished` again on every later request. HubEngine's history is
///   not cut, so anything HubEngine sends after a completion still fails the comparison.
private func compare<Out: Equatable, HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
    seed: Int, values: ClosedRange<Int> = 0...9, length: Int = 20,
    hub: (HubEngine.PassthroughSubject<Int, TestError>) -> HP,
    oc: (OpenCombine.PassthroughSubject<Int, TestError>) -> OP,
    sourceLocation: SourceLocation = #_sourceLocation
) where HP.Output == Out, HP.Failure == TestError, OP.Output == Out, OP.Failure == TestError {
    var generator = SeededGenerator(seed: UInt64(seed))
    var script = Differential.randomScript(length: length, values: values, using: &generator)
    // Half of the runs give demand only after the source has ended: this is where the reducing
    // operators must hold their result until the first request.
    let lateDemand = Bool.random(using: &generator)
    if lateDemand, let end = script.firstIndex(where: { $0 == .finish || $0 == .fail }) {
        let isRequest: (ScriptStep<Int>) -> Bool = { if case .request = $0 { true } else { false } }
        let early = script[..<end]
        script = early.filter { !isRequest($0) } + [script[end]] + early.filter(isRequest) + script[(end + 1)...]
    }
    if let cancel = script.firstIndex(of: .cancel) {
        script = script[...cancel] + script[(cancel + 1)...].filter { if case .request = $0 { false } else { true } }
    }
    let initial = lateDemand ? 0 : [0, 1, 2, nil].randomElement(using: &generator)!
    let perValue = Int.random(in: 0...2, using: &generator)
    let failure = stepwise(script, initialDemand: initial, demandPerValue: perValue, hub: hub, oc: oc)
    #expect(failure == nil, "seed \(seed), late demand \(lateDemand), initial \(String(describing: initial)), per value \(perValue): \(script)\n\(failure ?? "")",
            sourceLocation: sourceLocation)
}

/// Like `Differential.run`, but compares the two histories after every step, so that an event
/// delivered at the wrong moment (a held result sent before its demand) is caught too.
/// Returns a description of the first difference, or `nil`.
private func stepwise<Out: Equatable, HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
    _ script: [ScriptStep<Int>], initialDemand: Int?, demandPerValue: Int,
    hub: (HubEngine.PassthroughSubject<Int, TestError>) -> HP,
    oc: (OpenCombine.PassthroughSubject<Int, TestError>) -> OP
) -> String? where HP.Output == Out, HP.Failure == TestError, OP.Output == Out, OP.Failure == TestError {
    let hubSubject = HubEngine.PassthroughSubject<Int, TestError>()
    let ocSubject = OpenCombine.PassthroughSubject<Int, TestError>()
    let run = DifferentialRun<Out, TestError>(initialDemand: initialDemand, demandPerValue: demandPerValue)
    let (hubRecorder, ocRecorder) = (run.hub, run.oc)

    func difference(after step: String) -> String? {
        var expected = ocRecorder.events
        if let end = expected.firstIndex(where: { if case .finished = $0 { true } else if case .failure = $0 { true } else { false } }) {
            expected = Array(expected[...end])
        }
        guard hubRecorder.events != expected else { return nil }
        return "after \(step): HubEngine \(hubRecorder.events), OpenCombine \(expected)"
    }

    run.attach(hub: hub(hubSubject), oc: oc(ocSubject))
    if let difference = difference(after: "subscribe") { return difference }
    for (index, step) in script.enumerated() {
        if let action = step.downstream {
            run.play(action)
        } else {
            Differential.playSource(step, hubSubject: hubSubject, ocSubject: ocSubject)
        }
        if let difference = difference(after: "step \(index) \(step)") { return difference }
    }
    return nil
}

@Suite("TransformOperators: differential against OpenCombine")
struct TransformDifferentialTests {
    static let seeds = 0..<40

    // MARK: one-for-one and filtering

    @Test(arguments: seeds) func tryMap(seed: Int) {
        compare(seed: seed,
                hub: { $0.tryMap { v -> Int in if v == 7 { throw thrown(v) }; return v * 2 }.mapError(TestError.recorded) },
                oc: { $0.tryMap { v -> Int in if v == 7 { throw thrown(v) }; return v * 2 }.mapError(TestError.recorded) })
    }

    @Test(arguments: seeds) func compactMap(seed: Int) {
        compare(seed: seed,
                hub: { $0.compactMap { $0 % 3 == 0 ? nil : $0 + 100 } },
                oc: { $0.compactMap { $0 % 3 == 0 ? nil : $0 + 100 } })
    }

    @Test(arguments: seeds) func tryCompactMap(seed: Int) {
        compare(seed: seed,
                hub: { $0.tryCompactMap { v -> Int? in if v == 8 { throw thrown(v) }; return v.isMultiple(of: 2) ? nil : v }.mapError(TestError.recorded) },
                oc: { $0.tryCompactMap { v -> Int? in if v == 8 { throw thrown(v) }; return v.isMultiple(of: 2) ? nil : v }.mapError(TestError.recorded) })
    }

    @Test(arguments: seeds) func tryFilter(seed: Int) {
        compare(seed: seed,
                hub: { $0.tryFilter { v in if v == 9 { throw thrown(v) }; return v > 3 }.mapError(TestError.recorded) },
                oc: { $0.tryFilter { v in if v == 9 { throw thrown(v) }; return v > 3 }.mapError(TestError.recorded) })
    }

    @Test(arguments: seeds) func tryScan(seed: Int) {
        compare(seed: seed,
                hub: { $0.tryScan(0) { acc, v in if acc > 25 { throw thrown(acc) }; return acc + v }.mapError(TestError.recorded) },
                oc: { $0.tryScan(0) { acc, v in if acc > 25 { throw thrown(acc) }; return acc + v }.mapError(TestError.recorded) })
    }

    @Test(arguments: seeds) func removeDuplicates(seed: Int) {
        compare(seed: seed, values: 0...2,
                hub: { $0.removeDuplicates() },
                oc: { $0.removeDuplicates() })
    }

    @Test(arguments: seeds) func removeDuplicatesBy(seed: Int) {
        compare(seed: seed, values: 0...5,
                hub: { $0.removeDuplicates { abs($0 - $1) <= 1 } },
                oc: { $0.removeDuplicates { abs($0 - $1) <= 1 } })
    }

    @Test(arguments: seeds) func tryRemoveDuplicates(seed: Int) {
        compare(seed: seed, values: 0...4,
                hub: { $0.tryRemoveDuplicates { a, b in if b == 4 { throw thrown(a) }; return a == b }.mapError(TestError.recorded) },
                oc: { $0.tryRemoveDuplicates { a, b in if b == 4 { throw thrown(a) }; return a == b }.mapError(TestError.recorded) })
    }

    @Test(arguments: seeds) func replaceNil(seed: Int) {
        compare(seed: seed,
                hub: { $0.map { $0 % 2 == 0 ? Optional($0) : nil }.replaceNil(with: -1) },
                oc: { $0.map { $0 % 2 == 0 ? Optional($0) : nil }.replaceNil(with: -1) })
    }

    @Test(arguments: seeds) func mapError(seed: Int) {
        compare(seed: seed,
                hub: { $0.mapError { _ in TestError.other(42) } },
                oc: { $0.mapError { _ in TestError.other(42) } })
    }

    @Test(arguments: seeds) func replaceErrorThenSetFailureType(seed: Int) {
        compare(seed: seed,
                hub: { $0.replaceError(with: -1).setFailureType(to: TestError.self) },
                oc: { $0.replaceError(with: -1).setFailureType(to: TestError.self) })
    }

    @Test(arguments: seeds) func replaceEmpty(seed: Int) {
        compare(seed: seed, length: 8,
                hub: { $0.filter { $0 > 6 }.replaceEmpty(with: -1) },
                oc: { $0.filter { $0 > 6 }.replaceEmpty(with: -1) })
    }

    @Test(arguments: seeds) func keyPathMaps(seed: Int) {
        compare(seed: seed,
                hub: { $0.map { Triple(a: $0, b: $0 * 2, c: "\($0)") }.map(\.a, \.b, \.c).map { "\($0)/\($1)/\($2)" } },
                oc: { $0.map { Triple(a: $0, b: $0 * 2, c: "\($0)") }.map(\.a, \.b, \.c).map { "\($0)/\($1)/\($2)" } })
        compare(seed: seed,
                hub: { $0.map { Triple(a: $0, b: $0 * 2, c: "\($0)") }.map(\.b, \.c).map { "\($0)/\($1)" } },
                oc: { $0.map { Triple(a: $0, b: $0 * 2, c: "\($0)") }.map(\.b, \.c).map { "\($0)/\($1)" } })
        compare(seed: seed,
                hub: { $0.map { Triple(a: $0, b: $0 * 2, c: "\($0)") }.map(\.c) },
                oc: { $0.map { Triple(a: $0, b: $0 * 2, c: "\($0)") }.map(\.c) })
    }

    @Test(arguments: seeds) func collectByCount(seed: Int) {
        compare(seed: seed,
                hub: { $0.collect(2) },
                oc: { $0.collect(2) })
        compare(seed: seed,
                hub: { $0.collect(3) },
                oc: { $0.collect(3) })
    }

    @Test(arguments: seeds) func fusedChains(seed: Int) {
        compare(seed: seed,
                hub: { $0.map { $0 + 1 }.tryMap { v -> Int in if v == 5 { throw thrown(v) }; return v }.map { $0 * 3 }.mapError(TestError.recorded) },
                oc: { $0.map { $0 + 1 }.tryMap { v -> Int in if v == 5 { throw thrown(v) }; return v }.map { $0 * 3 }.mapError(TestError.recorded) })
        compare(seed: seed,
                hub: { $0.filter { $0 != 2 }.tryFilter { v in if v == 8 { throw thrown(v) }; return v > 1 }.filter { $0 != 6 }.mapError(TestError.recorded) },
                oc: { $0.filter { $0 != 2 }.tryFilter { v in if v == 8 { throw thrown(v) }; return v > 1 }.filter { $0 != 6 }.mapError(TestError.recorded) })
        compare(seed: seed,
                hub: { $0.compactMap(dropping(3)).compactMap(dropping(4)).map { $0 * 2 } },
                oc: { $0.compactMap(dropping(3)).compactMap(dropping(4)).map { $0 * 2 } })
        compare(seed: seed,
                hub: { $0.tryCompactMap { v -> Int? in if v == 9 { throw thrown(v) }; return v == 1 ? nil : v }.compactMap(dropping(2)).mapError(TestError.recorded) },
                oc: { $0.tryCompactMap { v -> Int? in if v == 9 { throw thrown(v) }; return v == 1 ? nil : v }.compactMap(dropping(2)).mapError(TestError.recorded) })
    }

    // MARK: reducing

    @Test(arguments: seeds) func reduce(seed: Int) {
        compare(seed: seed, hub: { $0.reduce(100) { $0 - $1 } }, oc: { $0.reduce(100) { $0 - $1 } })
    }

    @Test(arguments: seeds) func tryReduce(seed: Int) {
        compare(seed: seed,
                hub: { $0.tryReduce(0) { acc, v in if v == 9 { throw thrown(acc) }; return acc + v }.mapError(TestError.recorded) },
                oc: { $0.tryReduce(0) { acc, v in if v == 9 { throw thrown(acc) }; return acc + v }.mapError(TestError.recorded) })
    }

    @Test(arguments: seeds) func count(seed: Int) {
        compare(seed: seed, hub: { $0.count() }, oc: { $0.count() })
    }

    @Test(arguments: seeds) func collectAll(seed: Int) {
        compare(seed: seed, hub: { $0.collect() }, oc: { $0.collect() })
    }

    @Test(arguments: seeds) func ignoreOutput(seed: Int) {
        compare(seed: seed, hub: { $0.ignoreOutput() }, oc: { $0.ignoreOutput() })
    }

    @Test(arguments: seeds) func minAndMax(seed: Int) {
        compare(seed: seed, hub: { $0.min() }, oc: { $0.min() })
        compare(seed: seed, hub: { $0.max() }, oc: { $0.max() })
        // Ties by tens are broken by arrival order: the keys differ from the values.
        compare(seed: seed, hub: { $0.map { $0 * 7 }.min { $0 / 10 < $1 / 10 } }, oc: { $0.map { $0 * 7 }.min { $0 / 10 < $1 / 10 } })
        compare(seed: seed, hub: { $0.map { $0 * 7 }.max { $0 / 10 < $1 / 10 } }, oc: { $0.map { $0 * 7 }.max { $0 / 10 < $1 / 10 } })
    }

    @Test(arguments: seeds) func tryMinAndTryMax(seed: Int) {
        compare(seed: seed,
                hub: { $0.tryMin { a, b in if b == 9 { throw thrown(a) }; return a < b }.mapError(TestError.recorded) },
                oc: { $0.tryMin { a, b in if b == 9 { throw thrown(a) }; return a < b }.mapError(TestError.recorded) })
        compare(seed: seed,
                hub: { $0.tryMax { a, b in if b == 0 { throw thrown(a) }; return a < b }.mapError(TestError.recorded) },
                oc: { $0.tryMax { a, b in if b == 0 { throw thrown(a) }; return a < b }.mapError(TestError.recorded) })
    }

    @Test(arguments: seeds) func allSatisfy(seed: Int) {
        compare(seed: seed, hub: { $0.allSatisfy { $0 < 8 } }, oc: { $0.allSatisfy { $0 < 8 } })
    }

    @Test(arguments: seeds) func tryAllSatisfy(seed: Int) {
        compare(seed: seed,
                hub: { $0.tryAllSatisfy { v in if v == 9 { throw thrown(v) }; return v != 0 }.mapError(TestError.recorded) },
                oc: { $0.tryAllSatisfy { v in if v == 9 { throw thrown(v) }; return v != 0 }.mapError(TestError.recorded) })
    }

    @Test(arguments: seeds) func contains(seed: Int) {
        compare(seed: seed, hub: { $0.contains(5) }, oc: { $0.contains(5) })
        compare(seed: seed, hub: { $0.contains { $0 > 7 } }, oc: { $0.contains { $0 > 7 } })
    }

    @Test(arguments: seeds) func tryContains(seed: Int) {
        compare(seed: seed,
                hub: { $0.tryContains { v in if v == 0 { throw thrown(v) }; return v == 9 }.mapError(TestError.recorded) },
                oc: { $0.tryContains { v in if v == 0 { throw thrown(v) }; return v == 9 }.mapError(TestError.recorded) })
    }

    // MARK: a synchronous source with reentrant demand

    @Test(arguments: seeds) func sequenceSourceThroughCollectByCountAndReducers(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let count = Int.random(in: 0...9, using: &generator)
        let size = Int.random(in: 1...3, using: &generator)
        let initial = Int.random(in: 1...3, using: &generator)
        let perValue = Int.random(in: 0...2, using: &generator)

        let run = DifferentialRun<[Int], Never>(initialDemand: initial, demandPerValue: perValue)
        let (hub, oc) = (run.hub, run.oc)
        (0..<count).publisher.collect(size).subscribe(hub)
        OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<count).collect(size).subscribe(oc)
        #expect(hub.events == oc.events, "seed \(seed)")

        let containsRun = DifferentialRun<Bool, Never>(initialDemand: initial, demandPerValue: 0)
        let (hubContains, ocContains) = (containsRun.hub, containsRun.oc)
        (0..<count).publisher.contains(size).subscribe(hubContains)
        OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<count).contains(size).subscribe(ocContains)
        #expect(hubContains.events == ocContains.events, "seed \(seed)")
    }
}
