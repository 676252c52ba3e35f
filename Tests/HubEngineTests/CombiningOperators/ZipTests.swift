import Testing
import HubEngine
import HubTesting
import OpenCombine

@Suite("CombiningOperators: zip")
struct ZipTests {
    typealias Subject = HubEngine.PassthroughSubject<Int, TestError>
    typealias Probe = DemandProbe<Int, TestError>

    @Test func pairsValuesInOrderAndFinishesWhenAFinishedUpstreamRunsDry() {
        let (a, b) = (Subject(), Subject())
        let recorder = a.zip(b) { $0 * 10 + $1 }.record()
        a.send(1); a.send(2); a.send(3)
        b.send(4)
        a.send(completion: .finished)          // 2 and 3 still wait: not over
        b.send(5)
        #expect(recorder.events == [.subscription, .value(14), .value(25)])
        b.send(6)                              // a's last value used: a can give no more
        #expect(recorder.events == [.subscription, .value(14), .value(25), .value(36), .finished])
        b.send(7)
        #expect(recorder.events.count == 5)
    }

    @Test func finishesAtOnceWhenAnUpstreamFinishesWithNothingWaiting() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.zip(b) { $0 + $1 }.record()
        b.send(completion: .finished)
        #expect(recorder.events == [.subscription, .finished])
        #expect(a.cancellations == 1)
        #expect(b.cancellations == 0)
    }

    @Test func anUpstreamThatEndsWhileSubscribingEndsTheZipRightAfterTheSubscription() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        HubEngine.Empty<Int, Never>().zip(HubEngine.Just(1)) { $0 + $1 }.subscribe(recorder)
        #expect(recorder.events == [.subscription, .finished])
    }

    @Test func threeAndFourUpstreamsBuildTuples() {
        let (a, b, c, d) = (Subject(), Subject(), Subject(), Subject())
        let three = a.zip(b, c) { "\($0)\($1)\($2)" }.record()
        let four = Publishers.Zip4(a, b, c, d).map { "\($0)\($1)\($2)\($3)" }.record()
        let tuple = RecordingSubscriber<String, TestError>(initialDemand: .unlimited)
        Publishers.Zip3(a, b, c).map { "\($0.0)-\($0.1)-\($0.2)" }.subscribe(tuple)
        a.send(1); b.send(2); c.send(3); d.send(4)
        a.send(5); b.send(6); c.send(7)
        #expect(three.values == ["123", "567"])
        #expect(tuple.values == ["1-2-3", "5-6-7"])
        #expect(four.values == ["1234"])
        d.send(completion: .finished)
        #expect(four.events.last == .finished)
        #expect(three.events.last == .value("567"))
    }

    @Test func passesEachRequestToEveryUpstreamAndNeverWidensIt() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.zip(b) { $0 + $1 }.record(initialDemand: .max(2))
        #expect(a.requests == [.max(2)])
        #expect(b.requests == [.max(2)])
        #expect(a.send(1) == .none)
        #expect(b.send(1) == .none)
        recorder.request(.max(3))
        #expect(a.requests == [.max(2), .max(3)])
        #expect(b.requests == [.max(2), .max(3)])
        #expect(recorder.values == [2])
    }

    @Test func givesTheAnsweredDemandOnlyToTheUpstreamThatCompletedTheTuple() {
        let (a, b, c) = (Probe(), Probe(), Probe())
        let recorder = a.zip(b, c) { $0 + $1 + $2 }.record(initialDemand: .max(1), demandPerValue: .max(1))
        #expect(a.send(1) == .none)
        #expect(c.send(1) == .none)
        #expect(b.send(1) == .max(1))
        #expect(recorder.values == [3])
        #expect(a.requests == [.max(1)] && b.requests == [.max(1)] && c.requests == [.max(1)])
    }

    @Test func aRequestMadeWhileHandlingATupleReachesTheTriggeringUpstreamThroughItsAnswer() {
        let (a, b) = (Probe(), Probe())
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
        recorder.onValue = { _ in recorder.request(.max(5)); return .none }
        a.zip(b) { $0 + $1 }.subscribe(recorder)
        #expect(a.send(1) == .none)
        #expect(b.send(1) == .max(5))
        #expect(a.requests == [.max(1), .max(5)])
        #expect(b.requests == [.max(1)])
    }

    @Test func valuesSentFromInsideReceiveCompleteTheNextTupleAfterwardsNotNested() {
        let (a, b) = (Subject(), Subject())
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        var inside = false
        var nested = false
        recorder.onValue = { value in
            if inside { nested = true }
            inside = true
            if value == 12 { a.send(3); b.send(4) }
            inside = false
            return .none
        }
        a.zip(b) { $0 * 10 + $1 }.subscribe(recorder)
        a.send(1); b.send(2)
        #expect(recorder.values == [12, 34])
        #expect(!nested)
    }

    @Test func aFailureIsForwardedAtOnceAndCancelsTheOthers() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.zip(b) { $0 + $1 }.record()
        a.send(1)
        b.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .failure(.oops)])
        #expect(a.cancellations == 1)
        #expect(b.cancellations == 0)
        a.send(2)
        b.send(2)
        a.send(completion: .finished)
        #expect(recorder.events == [.subscription, .failure(.oops)])
    }

    @Test func cancelCancelsEveryUpstreamOnceAndStopsDelivery() {
        let (a, b, c, d) = (Probe(), Probe(), Probe(), Probe())
        let recorder = a.zip(b, c, d) { $0 + $1 + $2 + $3 }.record()
        recorder.cancel()
        recorder.cancel()
        #expect([a, b, c, d].map(\.cancellations) == [1, 1, 1, 1])
        for probe in [a, b, c, d] { probe.send(1) }
        #expect(recorder.events == [.subscription])
    }

    @Test func zeroRequestIsANoOp() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.zip(b) { $0 + $1 }.record(initialDemand: .none)
        recorder.request(.none)
        #expect(a.requests.isEmpty && b.requests.isEmpty)
    }

    @Test func coldSequencesZipOnlyWhatIsDemanded() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
        (1...5).publisher.zip((10...50).publisher) { $0 + $1 }.subscribe(recorder)
        #expect(recorder.events == [.subscription, .value(11), .value(13)])
        recorder.request(.unlimited)
        #expect(recorder.values == [11, 13, 15, 17, 19])
        #expect(recorder.events.last == .finished)
    }

    // MARK: Differential against OpenCombine

    @Test func handWrittenScriptsMatchOpenCombine() {
        let scripts: [[PairStep]] = [
            [.sendA(1), .sendA(2), .sendB(3), .finishA, .sendB(4), .sendB(5)],
            [.request(1), .sendA(1), .sendB(2), .sendA(3), .sendB(4), .request(2), .sendB(5), .sendA(6)],
            [.request(nil), .finishB, .sendA(1)],
            [.request(nil), .sendA(1), .failB, .sendB(2)],
            [.request(2), .sendA(1), .cancel, .sendB(2)],
        ]
        for script in scripts {
            let result = PairDifferential.run(script, initialDemand: nil,
                hub: { $0.zip($1) { $0 * 10 + $1 } }, oc: { $0.zip($1) { $0 * 10 + $1 } })
            #expect(result.hub == result.oc, "\(script)")
        }
    }

    @Test(arguments: 0..<150)
    func randomScriptsMatchOpenCombine(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = PairDifferential.randomScript(length: 24, using: &generator)
        let demands = PairDifferential.randomDemands(using: &generator)
        let result = PairDifferential.run(script, initialDemand: demands.initial, demandPerValue: demands.perValue,
            hub: { $0.zip($1) { $0 * 10 + $1 } }, oc: { $0.zip($1) { $0 * 10 + $1 } })
        #expect(result.hub == result.oc, "seed \(seed) \(demands): \(script)")
    }

    @Test(arguments: 0..<80)
    func randomScriptsMatchOpenCombineForZip3WithAColdThirdUpstream(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed) &+ 10_000)
        let script = PairDifferential.randomScript(length: 24, using: &generator)
        let demands = PairDifferential.randomDemands(using: &generator)
        let result = PairDifferential.run(script, initialDemand: demands.initial, demandPerValue: demands.perValue,
            hub: { a, b in a.zip(b, HubEngine.Publishers.Sequence<Range<Int>, TestError>(sequence: 0..<1000)) { $0 * 10_000 + $1 * 1000 + $2 } },
            oc: { a, b in a.zip(b, OpenCombine.Publishers.Sequence<Range<Int>, TestError>(sequence: 0..<1000)) { $0 * 10_000 + $1 * 1000 + $2 } })
        #expect(result.hub == result.oc, "seed \(seed) \(demands): \(script)")
    }
}
