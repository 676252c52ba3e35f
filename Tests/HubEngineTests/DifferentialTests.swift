import Testing
import HubEngine
import HubTesting
import OpenCombine

/// The same chains, scripts and demand on HubEngine and OpenCombine must give the same histories.
@Suite("Differential: HubEngine against OpenCombine")
struct DifferentialTests {
    @Test(arguments: 0..<200)
    func mapFilterScanOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = Differential.randomScript(length: 20, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        // (Closures with their types spelled out: inferred, this took seven seconds to type-check.)
        let result = Differential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { (subject: HubEngine.PassthroughSubject<Int, TestError>) in
                subject.filter { (value: Int) in value % 3 != 0 }.map { (value: Int) in value * 10 }
                    .scan(0) { (sum: Int, value: Int) in sum + value }
            },
            oc: { (subject: OpenCombine.PassthroughSubject<Int, TestError>) in
                subject.filter { (value: Int) in value % 3 != 0 }.map { (value: Int) in value * 10 }
                    .scan(0) { (sum: Int, value: Int) in sum + value }
            })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
    }

    @Test(arguments: 0..<100)
    func sequenceSourceWithReentrantDemand(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let count = Int.random(in: 0...6, using: &generator)
        let initial = Int.random(in: 1...3, using: &generator)
        let perValue = Int.random(in: 0...2, using: &generator)
        let run = DifferentialRun<Int, Never>(initialDemand: initial, demandPerValue: perValue)
        let (hub, oc) = (run.hub, run.oc)
        (0..<count).publisher.map { $0 + 1 }.subscribe(hub)
        OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<count).map { $0 + 1 }.subscribe(oc)
        #expect(hub.events == oc.events)
    }
}
