import Testing
import HubEngine
import HubTesting
import OpenCombine

/// The seeds against the article's own operator-chain definitions, run on OpenCombine:
/// same script (upstream subject, signal subject, downstream demand), same histories.
@Suite("Seeds: differential against the article's OpenCombine chains")
struct SeedsDifferentialTests {
    typealias History = [RecordedEvent<Int, TestError>]

    static func run<HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
        _ script: [SeedScriptStep],
        initialDemand: Int?,
        demandPerValue: Int,
        hub: (HubEngine.PassthroughSubject<Int, TestError>, HubEngine.PassthroughSubject<Void, Never>) -> HP,
        oc: (OpenCombine.PassthroughSubject<Int, TestError>, OpenCombine.PassthroughSubject<Void, Never>) -> OP
    ) -> (hub: History, oc: History)
    where HP.Output == Int, HP.Failure == TestError, OP.Output == Int, OP.Failure == TestError {
        Differential.run(
            script, initialDemand: initialDemand, demandPerValue: demandPerValue,
            hubSources: (HubEngine.PassthroughSubject<Int, TestError>(), HubEngine.PassthroughSubject<Void, Never>()),
            ocSources: (OpenCombine.PassthroughSubject<Int, TestError>(), OpenCombine.PassthroughSubject<Void, Never>()),
            hub: { hub($0.0, $0.1) }, oc: { oc($0.0, $0.1) },
            play: { step, hub, oc in
                switch step {
                case .send(let v): hub.0.send(v); oc.0.send(v)
                case .finish: hub.0.send(completion: .finished); oc.0.send(completion: .finished)
                case .fail: hub.0.send(completion: .failure(.oops)); oc.0.send(completion: .failure(.oops))
                case .fire: hub.1.send(()); oc.1.send(())
                case .finishSignal: hub.1.send(completion: .finished); oc.1.send(completion: .finished)
                case .request, .cancel: break
                }
            })
    }

    private static func parameters(_ seed: Int) -> (script: [SeedScriptStep], initial: Int?, perValue: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = SeedScriptStep.random(length: 24, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        return (script, initial, perValue)
    }

    /// `wait(untilOutputFrom:)` against `prepend(Empty(completeImmediately: false).prefix(untilOutputFrom:))`.
    @Test(arguments: 0..<150)
    func waitUntilOutputMatchesTheArticleDefinition(seed: Int) {
        let (script, initial, perValue) = Self.parameters(seed)
        let result = Self.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { source, signal in source.map { $0 * 10 }.wait(untilOutputFrom: signal) },
            oc: { source, signal in
                source.map { $0 * 10 }.prepend(
                    OpenCombine.Empty<Int, TestError>(completeImmediately: false).prefix(untilOutputFrom: signal))
            })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
    }

    /// `Publishers.publish(onOutputFrom:)` against `signal.map { make() }.switchToLatest()`.
    @Test(arguments: 0..<150)
    func publishMatchesTheArticleDefinition(seed: Int) {
        let (script, initial, perValue) = Self.parameters(seed)
        var hubRuns = 0
        var ocRuns = 0
        let result = Self.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { source, signal in
                HubEngine.Publishers.publish(onOutputFrom: signal) { () -> HubEngine.Publishers.Map<HubEngine.PassthroughSubject<Int, TestError>, Int> in
                    hubRuns += 1
                    let run = hubRuns
                    return source.map { $0 + 100 * run }
                }
            },
            oc: { source, signal in
                signal.setFailureType(to: TestError.self).map { _ -> OpenCombine.Publishers.Map<OpenCombine.PassthroughSubject<Int, TestError>, Int> in
                    ocRuns += 1
                    let run = ocRuns
                    return source.map { $0 + 100 * run }
                }
                .switchToLatest()
            })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
        #expect(hubRuns == ocRuns, "seed \(seed)")
    }

    /// `Publishers.publishAndRepeat(onOutputFrom:)` against `signal.prepend(()).map { make() }.switchToLatest()`.
    @Test(arguments: 0..<150)
    func publishAndRepeatMatchesTheArticleDefinition(seed: Int) {
        let (script, initial, perValue) = Self.parameters(seed)
        var hubRuns = 0
        var ocRuns = 0
        let result = Self.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { source, signal in
                HubEngine.Publishers.publishAndRepeat(onOutputFrom: signal) { () -> HubEngine.Publishers.Map<HubEngine.PassthroughSubject<Int, TestError>, Int> in
                    hubRuns += 1
                    let run = hubRuns
                    return source.map { $0 + 100 * run }
                }
            },
            oc: { source, signal in
                signal.prepend(()).setFailureType(to: TestError.self).map { _ -> OpenCombine.Publishers.Map<OpenCombine.PassthroughSubject<Int, TestError>, Int> in
                    ocRuns += 1
                    let run = ocRuns
                    return source.map { $0 + 100 * run }
                }
                .switchToLatest()
            })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
        #expect(hubRuns == ocRuns, "seed \(seed)")
    }
}
