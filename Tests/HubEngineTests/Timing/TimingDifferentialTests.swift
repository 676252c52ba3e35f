import Testing
import HubEngine
import OpenCombine
import HubTesting

/// HubEngine's timing operators against OpenCombine's, each driven by an immediate scheduler
/// (OpenCombine's virtual-time scheduler lives in its own test target only). With an immediate
/// scheduler every hop and timer runs at once, so the histories must match event for event.
@Suite("Timing: differential against OpenCombine")
struct TimingDifferentialTests {
    private static var hubNow: HubEngine.ImmediateScheduler { HubEngine.ImmediateScheduler() }
    private static var ocNow: OpenCombine.ImmediateScheduler { OpenCombine.ImmediateScheduler.shared }

    private func randomSetup(_ seed: Int) -> (script: [ScriptStep<Int>], initial: Int?, perValue: Int, generator: SeededGenerator) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = Differential.randomScript(length: 24, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        return (script, initial, perValue, generator)
    }

    @Test(arguments: 0..<150)
    func buffer(seed: Int) {
        var (script, initial, perValue, generator) = randomSetup(seed)
        let size = Int.random(in: 1...4, using: &generator)
        let keepFull = Bool.random(using: &generator)
        let strategy = Int.random(in: 0..<3, using: &generator)
        let result = Differential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { subject -> HubEngine.Publishers.Buffer<HubEngine.PassthroughSubject<Int, TestError>> in
                let whenFull: HubEngine.Publishers.BufferingStrategy<TestError> =
                    strategy == 0 ? .dropNewest : strategy == 1 ? .dropOldest : .customError({ .other(7) })
                return subject.buffer(size: size, prefetch: keepFull ? .keepFull : .byRequest, whenFull: whenFull)
            },
            oc: { subject -> OpenCombine.Publishers.Buffer<OpenCombine.PassthroughSubject<Int, TestError>> in
                let whenFull: OpenCombine.Publishers.BufferingStrategy<TestError> =
                    strategy == 0 ? .dropNewest : strategy == 1 ? .dropOldest : .customError({ .other(7) })
                return subject.buffer(size: size, prefetch: keepFull ? .keepFull : .byRequest, whenFull: whenFull)
            })
        #expect(result.hub == result.oc, "seed \(seed) size \(size) keepFull \(keepFull) strategy \(strategy): \(script)")
    }

    @Test(arguments: 0..<100)
    func receiveOn(seed: Int) {
        let (script, initial, perValue, _) = randomSetup(seed)
        let result = Differential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { $0.receive(on: Self.hubNow).map { $0 * 2 } },
            oc: { $0.receive(on: Self.ocNow).map { $0 * 2 } })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
    }

    @Test(arguments: 0..<100)
    func subscribeOn(seed: Int) {
        let (script, initial, perValue, _) = randomSetup(seed)
        let result = Differential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { $0.subscribe(on: Self.hubNow) },
            oc: { $0.subscribe(on: Self.ocNow) })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
    }

    @Test(arguments: 0..<100)
    func debounce(seed: Int) {
        let (script, initial, perValue, _) = randomSetup(seed)
        let result = Differential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { $0.debounce(for: .milliseconds(300), scheduler: Self.hubNow) },
            oc: { $0.debounce(for: .milliseconds(300), scheduler: Self.ocNow) })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
    }

    @Test(arguments: 0..<100)
    func throttle(seed: Int) {
        var (script, initial, perValue, generator) = randomSetup(seed)
        let latest = Bool.random(using: &generator)
        let result = Differential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { $0.throttle(for: .milliseconds(100), scheduler: Self.hubNow, latest: latest) },
            oc: { $0.throttle(for: .milliseconds(100), scheduler: Self.ocNow, latest: latest) })
        #expect(result.hub == result.oc, "seed \(seed) latest \(latest): \(script)")
    }

    @Test(arguments: 0..<100)
    func delay(seed: Int) {
        let (script, initial, perValue, _) = randomSetup(seed)
        let result = Differential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { $0.delay(for: .milliseconds(100), scheduler: Self.hubNow) },
            oc: { $0.delay(for: .milliseconds(100), scheduler: Self.ocNow) })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
    }

    /// The clocks differ (OpenCombine's immediate clock always reads the same), so only the
    /// event structure and the demand are compared.
    @Test(arguments: 0..<100)
    func measureInterval(seed: Int) {
        let (script, initial, perValue, _) = randomSetup(seed)
        let result = Differential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { $0.measureInterval(using: Self.hubNow).map { $0 >= .zero ? 1 : -1 } },
            oc: { $0.measureInterval(using: Self.ocNow).map { _ in 1 } })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
    }
}
