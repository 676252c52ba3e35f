import Testing
import HubEngine
import HubTesting
import OpenCombine

/// The sequence operators on random scripts, HubEngine against OpenCombine 0.14.0.
@Suite("SequenceOperators: differential against OpenCombine")
struct SequenceOperatorsDifferentialTests {
    typealias Diff = SeqOpsDifferential

    @Test(arguments: 0..<80)
    func first(seed: Int) {
        Diff.check(seed: seed, hub: { $0.first() }, oc: { $0.first() })
    }

    @Test(arguments: 0..<80)
    func firstWhere(seed: Int) {
        Diff.check(seed: seed, hub: { $0.first { $0 > 5 } }, oc: { $0.first { $0 > 5 } })
    }

    @Test(arguments: 0..<80)
    func tryFirstWhere(seed: Int) {
        Diff.check(seed: seed,
                   hub: { $0.tryFirst { try !SeqOpsPredicates.small($0) }.castToTestError() },
                   oc: { $0.tryFirst { try !SeqOpsPredicates.small($0) }.mapError { $0 as! TestError } })
    }

    @Test(arguments: 0..<80)
    func last(seed: Int) {
        Diff.check(seed: seed, hub: { $0.last() }, oc: { $0.last() })
    }

    @Test(arguments: 0..<80)
    func lastWhere(seed: Int) {
        Diff.check(seed: seed, hub: { $0.last { $0 % 2 == 0 } }, oc: { $0.last { $0 % 2 == 0 } })
    }

    @Test(arguments: 0..<80)
    func tryLastWhere(seed: Int) {
        Diff.check(seed: seed,
                   hub: { $0.tryLast(where: SeqOpsPredicates.small).castToTestError() },
                   oc: { $0.tryLast(where: SeqOpsPredicates.small).mapError { $0 as! TestError } })
    }

    @Test(arguments: 0..<80)
    func dropFirst(seed: Int) {
        let count = seed % 4
        Diff.check(seed: seed, hub: { $0.dropFirst(count) }, oc: { $0.dropFirst(count) })
    }

    @Test(arguments: 0..<80)
    func dropWhile(seed: Int) {
        Diff.check(seed: seed, hub: { $0.drop { $0 < 6 } }, oc: { $0.drop { $0 < 6 } })
    }

    @Test(arguments: 0..<80)
    func tryDropWhile(seed: Int) {
        Diff.check(seed: seed,
                   hub: { $0.tryDrop(while: SeqOpsPredicates.small).castToTestError() },
                   oc: { $0.tryDrop(while: SeqOpsPredicates.small).mapError { $0 as! TestError } })
    }

    @Test(arguments: 0..<80)
    func prefixCount(seed: Int) {
        let count = seed % 4
        Diff.check(seed: seed, hub: { $0.prefix(count) }, oc: { $0.prefix(count) })
    }

    @Test(arguments: 0..<80)
    func prefixWhile(seed: Int) {
        Diff.check(seed: seed, hub: { $0.prefix { $0 < 8 } }, oc: { $0.prefix { $0 < 8 } })
    }

    @Test(arguments: 0..<80)
    func tryPrefixWhile(seed: Int) {
        Diff.check(seed: seed,
                   hub: { $0.tryPrefix { try $0 != 9 && !SeqOpsPredicates.small($0 + 3) }.castToTestError() },
                   oc: { $0.tryPrefix { try $0 != 9 && !SeqOpsPredicates.small($0 + 3) }.mapError { $0 as! TestError } })
    }

    @Test(arguments: 0..<80)
    func outputAt(seed: Int) {
        let index = seed % 3
        Diff.check(seed: seed, hub: { $0.output(at: index) }, oc: { $0.output(at: index) })
    }

    @Test(arguments: 0..<80)
    func outputIn(seed: Int) {
        Diff.check(seed: seed, hub: { $0.output(in: 1..<4) }, oc: { $0.output(in: 1..<4) })
        Diff.check(seed: seed + 1000, hub: { $0.output(in: 2...) }, oc: { $0.output(in: 2...) })
        Diff.check(seed: seed + 2000, hub: { $0.output(in: ...1) }, oc: { $0.output(in: ...1) })
    }

    @Test(arguments: 0..<80)
    func prependValues(seed: Int) {
        Diff.check(seed: seed, hub: { $0.prepend(100, 101) }, oc: { $0.prepend(100, 101) })
    }

    @Test(arguments: 0..<80)
    func appendValues(seed: Int) {
        Diff.check(seed: seed, hub: { $0.append(100, 101, 102) }, oc: { $0.append(100, 101, 102) })
    }

    @Test(arguments: 0..<80)
    func appendSequenceThenFilter(seed: Int) {
        Diff.check(seed: seed,
                   hub: { $0.append([20, 21, 22] as [Int]).filter { (value: Int) in value % 3 != 0 }.dropFirst() },
                   oc: { $0.append([20, 21, 22] as [Int]).filter { (value: Int) in value % 3 != 0 }.dropFirst() })
    }

    @Test(arguments: 0..<80)
    func prependPublisherChain(seed: Int) {
        Diff.check(seed: seed,
                   hub: { $0.prepend(HubEngine.Just(50).setFailureTypeForTest()).prefix(5) },
                   oc: { $0.prepend(OpenCombine.Just(50).setFailureType(to: TestError.self)).prefix(5) })
    }

    @Test(arguments: 0..<80)
    func handleEventsIsTransparent(seed: Int) {
        Diff.check(seed: seed,
                   hub: { $0.handleEvents(receiveOutput: { _ in }, receiveRequest: { _ in }).map { $0 + 1 } },
                   oc: { $0.handleEvents(receiveOutput: { _ in }, receiveRequest: { _ in }).map { $0 + 1 } })
    }

    @Test(arguments: 0..<40)
    func concatenateTwoSubjects(seed: Int) {
        // The script drives the prefix subject for its first half and the suffix subject after,
        // while the first half's `finish`/`fail` hand over (or not) to the suffix.
        var generator = SeededGenerator(seed: UInt64(seed))
        let prefixScript = Differential.randomScript(length: 10, using: &generator).filter { $0 != .cancel }
        let suffixScript = Differential.randomScript(length: 10, values: 10...19, using: &generator)
        let initial = Int.random(in: 0...3, using: &generator)
        let perValue = Int.random(in: 0...1, using: &generator)

        let hubPrefix = HubEngine.PassthroughSubject<Int, TestError>()
        let hubSuffix = HubEngine.PassthroughSubject<Int, TestError>()
        let run = DifferentialRun<Int, TestError>(initialDemand: initial, demandPerValue: perValue)
        let (hub, oc) = (run.hub, run.oc)
        hubPrefix.append(hubSuffix).subscribe(hub)
        let ocPrefix = OpenCombine.PassthroughSubject<Int, TestError>()
        let ocSuffix = OpenCombine.PassthroughSubject<Int, TestError>()
        ocPrefix.append(ocSuffix).subscribe(oc)

        var cancelled = false
        func drive(_ script: [ScriptStep<Int>], hubSubject: HubEngine.PassthroughSubject<Int, TestError>,
                   ocSubject: OpenCombine.PassthroughSubject<Int, TestError>) {
            for step in script {
                switch step {
                case .send(let v): hubSubject.send(v); ocSubject.send(v)
                case .finish: hubSubject.send(completion: .finished); ocSubject.send(completion: .finished)
                case .fail: hubSubject.send(completion: .failure(.oops)); ocSubject.send(completion: .failure(.oops))
                case .request(let n):
                    hub.request(Differential.hubDemand(n))
                    if !cancelled { oc.request(Differential.ocDemand(n)) }
                case .cancel:
                    hub.cancel(); oc.cancel(); cancelled = true
                }
            }
        }
        drive(prefixScript, hubSubject: hubPrefix, ocSubject: ocPrefix)
        drive([.finish], hubSubject: hubPrefix, ocSubject: ocPrefix)
        drive(suffixScript, hubSubject: hubSuffix, ocSubject: ocSuffix)
        #expect(hub.events == oc.events, "seed \(seed): \(prefixScript) then \(suffixScript)")
    }
}

extension HubEngine.Just {
    /// `Just` with `TestError` as its failure, built from a `Record` since HubEngine's
    /// `setFailureType` belongs to another area.
    func setFailureTypeForTest() -> HubEngine.Record<Output, TestError> {
        HubEngine.Record(output: [output], completion: .finished)
    }
}

/// The operators over a synchronous `Publishers.Sequence`, whose values arrive from inside the
/// downstream's own `request` and whose demand is topped up from inside `receive(_:)`.
@Suite("SequenceOperators: synchronous sources against OpenCombine")
struct SeqOpsSynchronousSourceTests {
    private static func compare<HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
        seed: Int, hub: (HubEngine.Publishers.Sequence<Range<Int>, Never>) -> HP,
        oc: (OpenCombine.Publishers.Sequence<Range<Int>, Never>) -> OP,
        sourceLocation: SourceLocation = #_sourceLocation
    ) where HP.Output == Int, HP.Failure == Never, OP.Output == Int, OP.Failure == Never {
        var generator = SeededGenerator(seed: UInt64(seed))
        let count = Int.random(in: 0...7, using: &generator)
        let initial = Int.random(in: 1...3, using: &generator)
        let perValue = Int.random(in: 0...2, using: &generator)
        let later = Int.random(in: 1...4, using: &generator)
        let run = DifferentialRun<Int, Never>(initialDemand: initial, demandPerValue: perValue)
        let (hubRecorder, ocRecorder) = (run.hub, run.oc)
        hub(HubEngine.Publishers.Sequence(sequence: 0..<count)).subscribe(hubRecorder)
        oc(OpenCombine.Publishers.Sequence(sequence: 0..<count)).subscribe(ocRecorder)
        hubRecorder.request(.max(later))
        ocRecorder.request(.max(later))
        #expect(hubRecorder.events == ocRecorder.events,
                "seed \(seed): count \(count) initial \(initial) perValue \(perValue) later \(later)",
                sourceLocation: sourceLocation)
    }

    @Test(arguments: 0..<40)
    func operators(seed: Int) {
        Self.compare(seed: seed, hub: { $0.first() }, oc: { $0.first() })
        Self.compare(seed: seed, hub: { $0.last { $0 < 4 } }, oc: { $0.last { $0 < 4 } })
        Self.compare(seed: seed, hub: { $0.dropFirst(2) }, oc: { $0.dropFirst(2) })
        Self.compare(seed: seed, hub: { $0.drop { $0 < 3 } }, oc: { $0.drop { $0 < 3 } })
        Self.compare(seed: seed, hub: { $0.prefix(3) }, oc: { $0.prefix(3) })
        Self.compare(seed: seed, hub: { $0.prefix { $0 < 5 } }, oc: { $0.prefix { $0 < 5 } })
        Self.compare(seed: seed, hub: { $0.output(in: 2...4) }, oc: { $0.output(in: 2...4) })
        Self.compare(seed: seed, hub: { $0.append(10, 11) }, oc: { $0.append(10, 11) })
        Self.compare(seed: seed, hub: { $0.prepend(20, 21).append([30, 31]) }, oc: { $0.prepend(20, 21).append([30, 31]) })
        Self.compare(seed: seed, hub: { $0.append(HubEngine.Just(9)).dropFirst().prefix(4) },
                     oc: { $0.append(OpenCombine.Just(9)).dropFirst().prefix(4) })
        Self.compare(seed: seed, hub: { source in HubEngine.Deferred { source }.handleEvents().output(at: 1) },
                     oc: { source in OpenCombine.Deferred { source }.handleEvents().output(at: 1) })
    }
}
