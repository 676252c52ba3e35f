import Testing
import HubEngine
import HubTesting
import OpenCombine

@Suite("CombiningOperators: drop(untilOutputFrom:) and prefix(untilOutputFrom:)")
struct UntilOutputTests {
    typealias Subject = HubEngine.PassthroughSubject<Int, TestError>
    typealias Probe = DemandProbe<Int, TestError>

    // MARK: drop(untilOutputFrom:)

    @Test func dropLetsValuesThroughOnlyAfterTheTriggerEmits() {
        let (source, trigger) = (Subject(), Subject())
        let recorder = source.drop(untilOutputFrom: trigger).record()
        source.send(1); source.send(2)
        trigger.send(0)
        source.send(3); source.send(4)
        source.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(3), .value(4), .finished])
    }

    @Test func dropPassesDemandThroughAndAsksTheTriggerForOne() {
        let (source, trigger) = (Probe(), Probe())
        let recorder = source.drop(untilOutputFrom: trigger).record(initialDemand: .max(2))
        #expect(source.requests == [.max(2)])
        #expect(trigger.requests == [.max(1)])
        #expect(source.send(1) == .none)              // dropped: uses up demand, nothing given back
        #expect(trigger.send(0) == .none)
        #expect(trigger.cancellations == 1)           // the trigger is done once it fired
        recorder.demandPerValue = .max(1)
        #expect(source.send(2) == .max(1))
        recorder.request(.max(3))
        #expect(source.requests == [.max(2), .max(3)])
        #expect(recorder.values == [2])
    }

    @Test func dropEndsWithTheTriggersCompletionWhenItNeverEmitted() {
        let completions: [HubEngine.Subscribers.Completion<TestError>] = [.finished, .failure(.oops)]
        for completion in completions {
            let (source, trigger) = (Probe(), Probe())
            let recorder = source.drop(untilOutputFrom: trigger).record()
            trigger.send(completion: completion)
            #expect(recorder.events == [.subscription, completion == .finished ? .finished : .failure(.oops)])
            #expect(source.cancellations == 1)
            source.send(1)
            #expect(recorder.events.count == 2)
        }
    }

    @Test func dropIgnoresTheTriggersCompletionAfterItFired() {
        let (source, trigger) = (Subject(), Subject())
        let recorder = source.drop(untilOutputFrom: trigger).record()
        trigger.send(0)
        trigger.send(completion: .failure(.oops))
        source.send(1)
        #expect(recorder.events == [.subscription, .value(1)])
    }

    @Test func dropForwardsTheUpstreamsFailureAndCancelsTheTrigger() {
        let (source, trigger) = (Probe(), Probe())
        let recorder = source.drop(untilOutputFrom: trigger).record()
        source.send(completion: .failure(.other(7)))
        #expect(recorder.events == [.subscription, .failure(.other(7))])
        #expect(trigger.cancellations == 1)
        trigger.send(completion: .finished)
        #expect(recorder.events.count == 2)
    }

    @Test func dropCancelCancelsBothAndStopsDelivery() {
        let (source, trigger) = (Probe(), Probe())
        let recorder = source.drop(untilOutputFrom: trigger).record()
        recorder.cancel(); recorder.cancel()
        #expect(source.cancellations == 1 && trigger.cancellations == 1)
        trigger.send(0); source.send(1); trigger.send(completion: .finished)
        #expect(recorder.events == [.subscription])
    }

    // MARK: prefix(untilOutputFrom:)

    @Test func prefixRepublishesUntilTheTriggerEmitsThenFinishes() {
        let (source, trigger) = (Subject(), Subject())
        let recorder = source.prefix(untilOutputFrom: trigger).record()
        source.send(1); source.send(2)
        trigger.send(0)
        source.send(3)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .finished])
    }

    @Test func prefixPassesDemandThroughCancelsTheUpstreamOnTrigger() {
        let (source, trigger) = (Probe(), Probe())
        let recorder = source.prefix(untilOutputFrom: trigger).record(initialDemand: .max(1), demandPerValue: .max(1))
        #expect(source.requests == [.max(1)])
        #expect(trigger.requests == [.max(1)])
        #expect(source.send(1) == .max(1))
        recorder.request(.max(2))
        #expect(source.requests == [.max(1), .max(2)])
        trigger.send(0)
        #expect(source.cancellations == 1)
        #expect(recorder.events == [.subscription, .value(1), .finished])
        source.send(2)
        #expect(recorder.events.count == 3)
    }

    @Test func prefixIgnoresTheTriggersCompletion() {
        let (source, trigger) = (Subject(), HubEngine.PassthroughSubject<String, Never>())
        let recorder = source.prefix(untilOutputFrom: trigger).record()
        trigger.send(completion: .finished)
        source.send(1)
        #expect(recorder.events == [.subscription, .value(1)])
    }

    @Test func prefixForwardsTheUpstreamsFailureAndCancelsTheTrigger() {
        let (source, trigger) = (Probe(), Probe())
        let recorder = source.prefix(untilOutputFrom: trigger).record()
        source.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .failure(.oops)])
        #expect(trigger.cancellations == 1)
        trigger.send(0)
        #expect(recorder.events.count == 2)
    }

    @Test func prefixWithATriggerThatFiresAtOnceFinishesRightAfterTheSubscription() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        (1...3).publisher.prefix(untilOutputFrom: HubEngine.Just(0)).subscribe(recorder)
        #expect(recorder.events == [.subscription, .finished])
    }

    @Test func prefixCancelCancelsBothAndStopsDelivery() {
        let (source, trigger) = (Probe(), Probe())
        let recorder = source.prefix(untilOutputFrom: trigger).record()
        recorder.cancel(); recorder.cancel()
        #expect(source.cancellations == 1 && trigger.cancellations == 1)
        source.send(1); trigger.send(0)
        #expect(recorder.events == [.subscription])
    }

    // MARK: Differential against OpenCombine

    /// Runs a random two-source script (seeded) on both libraries.
    private static func randomRun<HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
        seed: Int,
        hub: (Subject, Subject) -> HP,
        oc: (OpenCombine.PassthroughSubject<Int, TestError>, OpenCombine.PassthroughSubject<Int, TestError>) -> OP
    ) -> (hub: [RecordedEvent<Int, TestError>], oc: [RecordedEvent<Int, TestError>], about: String)
    where HP.Output == Int, HP.Failure == TestError, OP.Output == Int, OP.Failure == TestError {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = PairDifferential.randomScript(length: 24, using: &generator)
        let demands = PairDifferential.randomDemands(using: &generator)
        let result = PairDifferential.run(script, initialDemand: demands.initial, demandPerValue: demands.perValue, hub: hub, oc: oc)
        return (result.hub, result.oc, "seed \(seed) \(demands): \(script)")
    }

    @Test(arguments: 20_000..<20_150)
    func dropMatchesOpenCombineOnRandomScripts(seed: Int) {
        let run = Self.randomRun(seed: seed, hub: { $0.drop(untilOutputFrom: $1) }, oc: { $0.drop(untilOutputFrom: $1) })
        #expect(run.hub == run.oc.upToFirstTerminal(), "\(run.about)")
        #expect(contractViolations(run.hub).isEmpty, "\(run.about)")
    }

    @Test(arguments: 30_000..<30_150)
    func prefixMatchesOpenCombineOnRandomScripts(seed: Int) {
        let run = Self.randomRun(seed: seed, hub: { $0.prefix(untilOutputFrom: $1) }, oc: { $0.prefix(untilOutputFrom: $1) })
        #expect(run.hub == run.oc, "\(run.about)")
    }

    @Test func openCombineDeliversASecondCompletionWhereHubEngineDoesNot() {
        // The one place the histories are trimmed: OpenCombine 0.14 keeps the trigger
        // after the upstream finished and forwards its completion too.
        let result = PairDifferential.run([.request(nil), .finishA, .finishB],
            hub: { $0.drop(untilOutputFrom: $1) }, oc: { $0.drop(untilOutputFrom: $1) })
        #expect(result.hub == [.subscription, .finished])
        #expect(result.oc == [.subscription, .finished, .finished])
    }
}
