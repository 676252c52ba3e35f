import Testing
import HubEngine
import HubTesting
import OpenCombine

/// `Future` and `Record` on random scenarios, HubEngine against OpenCombine 0.14.0.
@Suite("SequenceOperators: Future and Record against OpenCombine")
struct SeqOpsPublishersDifferentialTests {
    @Test(arguments: 0..<100)
    func futureWithSeveralSubscribers(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        var hubPromise: HubEngine.Future<Int, TestError>.Promise?
        let hubFuture = HubEngine.Future<Int, TestError> { hubPromise = $0 }
        var ocPromise: OpenCombine.Future<Int, TestError>.Promise?
        let ocFuture = OpenCombine.Future<Int, TestError> { ocPromise = $0 }
        var runs: [DifferentialRun<Int, TestError>] = []
        var steps: [String] = []
        for _ in 0..<12 {
            let roll = Int.random(in: 0..<100, using: &generator)
            switch roll {
            case 0..<30:
                let initial = Int.random(in: 0...1, using: &generator)
                steps.append("subscribe(\(initial))")
                let run = DifferentialRun<Int, TestError>(initialDemand: initial, demandPerValue: 0)
                run.attach(hub: hubFuture, oc: ocFuture)
                runs.append(run)
            case 30..<60 where !runs.isEmpty:
                let index = Int.random(in: 0..<runs.count, using: &generator)
                steps.append("request(\(index))")
                runs[index].play(.request(1))
            case 60..<70 where !runs.isEmpty:
                let index = Int.random(in: 0..<runs.count, using: &generator)
                steps.append("cancel(\(index))")
                runs[index].play(.cancel)
            case 70..<88:
                let value = Int.random(in: 0...9, using: &generator)
                steps.append("succeed(\(value))")
                hubPromise?(.success(value))
                ocPromise?(.success(value))
            case 88..<100:
                steps.append("fail")
                hubPromise?(.failure(.oops))
                ocPromise?(.failure(.oops))
            default:
                break
            }
        }
        #expect(runs.allSatisfy { $0.agree }, "seed \(seed): \(steps)")
    }

    @Test(arguments: 0..<100)
    func recordReplay(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let output = (0..<Int.random(in: 0...5, using: &generator)).map { _ in Int.random(in: 0...9, using: &generator) }
        let fails = Bool.random(using: &generator)
        let initial = Int.random(in: 0...2, using: &generator)
        let perValue = Int.random(in: 0...1, using: &generator)
        let run = DifferentialRun<Int, TestError>(initialDemand: initial, demandPerValue: perValue)
        let (hub, oc) = (run.hub, run.oc)
        HubEngine.Record<Int, TestError>(output: output, completion: fails ? .failure(.oops) : .finished).subscribe(hub)
        OpenCombine.Record<Int, TestError>(output: output, completion: fails ? .failure(.oops) : .finished).subscribe(oc)
        var steps: [String] = []
        for _ in 0..<4 {
            if Int.random(in: 0..<6, using: &generator) == 0 {
                steps.append("cancel")
                hub.cancel()
                oc.cancel()
            } else {
                let n = Int.random(in: 1...2, using: &generator)
                steps.append("request(\(n))")
                hub.request(.max(n))
                oc.request(.max(n))
            }
        }
        #expect(hub.events == oc.events, "seed \(seed): \(output) \(fails) \(initial) \(perValue) \(steps)")
    }

    @Test(arguments: 0..<60)
    func deferredFutureFirst(seed: Int) {
        // A chain mixing the new publishers and operators: Deferred + Record + prepend + last.
        Diff.check(seed: seed,
                   hub: { subject in HubEngine.Deferred { subject }.prepend(HubEngine.Record(output: [40, 41], completion: .finished)).output(in: 1...4) },
                   oc: { subject in OpenCombine.Deferred { subject }.prepend(OpenCombine.Record(output: [40, 41], completion: .finished)).output(in: 1...4) })
    }

    typealias Diff = SeqOpsDifferential
}
