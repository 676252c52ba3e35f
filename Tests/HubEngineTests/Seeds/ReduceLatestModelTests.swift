import Testing
import HubEngine
import HubTesting

/// Random scripts on `reduceLatest` over three well-behaved upstreams (they only send what was
/// requested from them: everything, since reduceLatest reads them unlimited), checked against
/// a small reference model of the documented rules.
@Suite("Seeds: reduceLatest against a reference model")
struct ReduceLatestModelTests {
    private enum Step: CustomStringConvertible {
        case send(Int, Int)
        case finish(Int)
        case fail(Int)
        case request(Int?)
        case cancel

        var description: String {
            switch self {
            case .send(let i, let v): return "send(\(i), \(v))"
            case .finish(let i): return "finish(\(i))"
            case .fail(let i): return "fail(\(i))"
            case .request(let n): return "request(\(n.map(String.init) ?? "unlimited"))"
            case .cancel: return "cancel"
            }
        }
    }

    private struct Output: Equatable, CustomStringConvertible {
        let values: [Int?]
        var description: String { "\(values)" }
    }

    /// The documented behaviour, written plainly.
    private struct Model {
        var latest: [Int?] = [nil, nil, nil]
        var finished = [false, false, false]
        var demand = Subscribers.Demand.none
        var pending = false
        var done = false
        var history: [RecordedEvent<Output, TestError>] = [.subscription]
        let perValue: Subscribers.Demand

        mutating func drain() {
            while !done, pending, demand > 0, latest.contains(where: { $0 != nil }) {
                pending = false
                demand -= 1
                history.append(.value(Output(values: latest)))
                demand += perValue
            }
        }

        mutating func apply(_ step: Step) {
            guard !done else { return }
            switch step {
            case .send(let i, let v):
                latest[i] = v
                pending = true
                drain()
            case .finish(let i):
                finished[i] = true
                if !finished.contains(false) {
                    done = true
                    history.append(.finished)
                }
            case .fail:
                done = true
                history.append(.failure(.oops))
            case .request(let n):
                demand += n.map { .max($0) } ?? .unlimited
                drain()
            case .cancel:
                done = true
            }
        }
    }

    @Test(arguments: 0..<200)
    func randomScriptsMatchTheModel(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let perValue = Subscribers.Demand.max(Int.random(in: 0...1, using: &generator))
        let initial = [Subscribers.Demand.none, .max(1), .max(2), .unlimited].randomElement(using: &generator)!
        let probes = (0..<3).map { _ in DemandProbe<Int, TestError>() }
        var sent = [0, 0, 0]
        var completed = [false, false, false]
        let recorder = RecordingSubscriber<Output, TestError>(initialDemand: initial, demandPerValue: perValue)
        probes[0].reduceLatest(probes[1], probes[2]) { Output(values: [$0, $1, $2]) }.subscribe(recorder)
        var model = Model(perValue: perValue)
        model.apply(.request(initial.max))
        var script: [Step] = []

        for _ in 0..<30 {
            let i = Int.random(in: 0..<3, using: &generator)
            let step: Step
            switch Int.random(in: 0..<100, using: &generator) {
            case 0..<60: step = .send(i, Int.random(in: 0...9, using: &generator))
            case 60..<85: step = .request(Int.random(in: 0..<6, using: &generator) == 0 ? nil : Int.random(in: 1...3, using: &generator))
            case 85..<94: step = .finish(i)
            case 94..<97: step = .fail(i)
            default: step = .cancel
            }
            switch step {
            case .send(let i, let v):
                // A well-behaved upstream sends only what was requested, and nothing after completing.
                guard !completed[i], probes[i].totalDemand > sent[i] else { continue }
                sent[i] += 1
                probes[i].send(v)
            case .finish(let i):
                guard !completed[i] else { continue }
                completed[i] = true
                probes[i].send(completion: .finished)
            case .fail(let i):
                guard !completed[i] else { continue }
                completed[i] = true
                probes[i].send(completion: .failure(.oops))
            case .request(let n):
                recorder.request(n.map { Subscribers.Demand.max($0) } ?? .unlimited)
            case .cancel:
                recorder.cancel()
            }
            script.append(step)
            model.apply(step)
            #expect(recorder.events == model.history, "seed \(seed): \(script)")
            if !model.done {
                for index in 0..<3 where !completed[index] {
                    #expect(probes[index].totalDemand == .unlimited, "seed \(seed) upstream \(index): \(script)")
                }
            }
        }
        if model.done {
            for index in 0..<3 where !completed[index] {
                #expect(probes[index].cancellations == 1, "seed \(seed) upstream \(index): \(script)")
            }
        }
    }
}
