import Testing
import HubEngine
import HubTesting

@Suite("CombiningOperators: combineLatest")
struct CombineLatestTests {
    typealias Subject = HubEngine.PassthroughSubject<Int, TestError>
    typealias Probe = DemandProbe<Int, TestError>

    // MARK: Event histories (marbles from Combine's documentation)

    /// The example of Apple's `combineLatest(_:)` documentation:
    /// pub1: 1 2 . 3 45 .      pub2: . . 2 . . 22
    /// prints (2,2) (3,2) (45,2) (45,22)
    @Test func emitsTheLatestPairOnceEveryUpstreamHasEmitted() {
        let (pub1, pub2) = (Subject(), Subject())
        let recorder = pub1.combineLatest(pub2) { "(\($0),\($1))" }.record()
        pub1.send(1); pub1.send(2)
        #expect(recorder.events == [.subscription])
        pub2.send(2); pub1.send(3); pub1.send(45); pub2.send(22)
        #expect(recorder.values == ["(2,2)", "(3,2)", "(45,2)", "(45,22)"])
    }

    /// The transform example of the same page: 4, 18, 6, 36, 156.
    @Test func theTransformVariantAppliesTheClosureToTheLatestValues() {
        let (pub1, pub2) = (Subject(), Subject())
        let recorder = pub1.combineLatest(pub2) { $0 * $1 }.record()
        pub1.send(1); pub1.send(2); pub2.send(2); pub1.send(9); pub1.send(3); pub2.send(12); pub1.send(13)
        #expect(recorder.values == [4, 18, 6, 36, 156])
    }

    @Test func threeAndFourUpstreams() {
        let (a, b, c, d) = (Subject(), Subject(), Subject(), Subject())
        let three = a.combineLatest(b, c) { "\($0)\($1)\($2)" }.record()
        let four = a.combineLatest(b, c, d) { "\($0)\($1)\($2)\($3)" }.record()
        let tuple = RecordingSubscriber<String, TestError>(initialDemand: .unlimited)
        Publishers.CombineLatest4(a, b, c, d).map { "\($0.0)-\($0.1)-\($0.2)-\($0.3)" }.subscribe(tuple)
        a.send(1); b.send(2); c.send(3)
        #expect(three.values == ["123"])
        #expect(four.values.isEmpty)
        d.send(4); a.send(5)
        #expect(three.values == ["123", "523"])
        #expect(four.values == ["1234", "5234"])
        #expect(tuple.values == ["1-2-3-4", "5-2-3-4"])
    }

    @Test func keepsGoingAfterOneUpstreamFinishesAndFinishesWhenAllHave() {
        let (a, b) = (Subject(), Subject())
        let recorder = a.combineLatest(b) { $0 * 10 + $1 }.record()
        a.send(1); b.send(2)
        a.send(completion: .finished)
        b.send(3)
        #expect(recorder.events == [.subscription, .value(12), .value(13)])
        b.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(12), .value(13), .finished])
    }

    @Test func anUpstreamThatFinishesWithoutEmittingDoesNotEndItEarly() {
        // Apple: "All upstream publishers need to finish for this publisher to finish."
        let (a, b) = (Probe(), Probe())
        let recorder = a.combineLatest(b) { $0 + $1 }.record()
        a.send(completion: .finished)
        #expect(recorder.events == [.subscription])
        #expect(b.cancellations == 0)
        b.send(1)
        b.send(completion: .finished)
        #expect(recorder.events == [.subscription, .finished])
    }

    @Test func upstreamsThatFinishWhileSubscribingFinishRightAfterTheSubscription() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
        HubEngine.Just(1).combineLatest(HubEngine.Empty<Int, Never>()) { $0 + $1 }.subscribe(recorder)
        #expect(recorder.events == [.subscription, .finished])
    }

    @Test func aFailureIsForwardedAtOnceAndCancelsTheOthers() {
        let (a, b, c) = (Probe(), Probe(), Probe())
        let recorder = a.combineLatest(b, c) { $0 + $1 + $2 }.record()
        a.send(1); b.send(1); c.send(1)
        c.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .value(3), .failure(.oops)])
        #expect([a, b, c].map(\.cancellations) == [1, 1, 0])
        a.send(2); b.send(completion: .finished)
        #expect(recorder.events.count == 3)
    }

    // MARK: Demand

    @Test func passesEachRequestToEveryUpstream() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.combineLatest(b) { $0 + $1 }.record(initialDemand: .max(1))
        #expect(a.requests == [.max(1)] && b.requests == [.max(1)])
        recorder.request(.max(2))
        #expect(a.requests == [.max(1), .max(2)] && b.requests == [.max(1), .max(2)])
        #expect(!a.requests.contains(.unlimited))
    }

    @Test func valuesWithoutDemandOnlyReplaceTheLatestAndNothingIsKeptForLater() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.combineLatest(b) { $0 * 10 + $1 }.record(initialDemand: .max(1))
        a.send(1); b.send(1)
        #expect(recorder.values == [11])
        a.send(2); a.send(3); b.send(2)        // no demand: dropped, latest values kept
        recorder.request(.max(1))              // no tuple was kept to deliver now
        #expect(recorder.values == [11])
        a.send(4)
        #expect(recorder.values == [11, 42])
    }

    @Test func theAnsweredDemandGoesBackToTheUpstreamThatTriggeredTheTuple() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.combineLatest(b) { $0 + $1 }.record(initialDemand: .max(1), demandPerValue: .max(2))
        #expect(a.send(1) == .none)
        #expect(b.send(1) == .max(2))
        #expect(a.send(2) == .max(2))
        #expect(recorder.values == [2, 3])
    }

    @Test func aRequestFromInsideReceiveGoesToEveryUpstream() {
        let (a, b) = (Probe(), Probe())
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
        recorder.onValue = { _ in recorder.request(.max(3)); return .none }
        a.combineLatest(b) { $0 + $1 }.subscribe(recorder)
        a.send(1)
        #expect(b.send(1) == .none)
        #expect(a.requests == [.max(1), .max(3)])
        #expect(b.requests == [.max(1), .max(3)])
    }

    /// The reentrant value's tuple is delivered after the running one returns (not nested),
    /// since the downstream still had demand (it used to be dropped).
    @Test func aValueSentFromInsideReceiveIsDeliveredAfterwardsNotNested() {
        let (a, b) = (Subject(), Subject())
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        var nested = false
        var inside = false
        recorder.onValue = { value in
            if inside { nested = true }
            inside = true
            if value == 11 { a.send(2) }
            inside = false
            return .none
        }
        a.combineLatest(b) { $0 * 10 + $1 }.subscribe(recorder)
        a.send(1); b.send(1)
        a.send(3)
        #expect(!nested)
        #expect(recorder.values == [11, 21, 31])
    }

    @Test func coldSequencesCombineAsDemanded() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        [1, 2].publisher.combineLatest([10, 20].publisher) { $0 + $1 }.subscribe(recorder)
        // a is drained (and finished) before b subscribes; b's values each pair with a's last value.
        #expect(recorder.events == [.subscription, .value(12), .value(22), .finished])
    }

    // MARK: Cancellation

    @Test func cancelCancelsEveryUpstreamOnceAndStopsDelivery() {
        let (a, b, c, d) = (Probe(), Probe(), Probe(), Probe())
        let recorder = a.combineLatest(b, c, d) { $0 + $1 + $2 + $3 }.record()
        recorder.cancel(); recorder.cancel()
        #expect([a, b, c, d].map(\.cancellations) == [1, 1, 1, 1])
        for probe in [a, b, c, d] { probe.send(1) }
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription])
        #expect(a.requests == [.unlimited])
    }

    @Test func zeroRequestIsANoOp() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.combineLatest(b) { $0 + $1 }.record(initialDemand: .none)
        recorder.request(.none)
        #expect(a.requests.isEmpty && b.requests.isEmpty)
    }

    // MARK: Random scripts

    @Test(arguments: 0..<150)
    func randomScriptsKeepTheContract(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed) &+ 50_000)
        let script = PairDifferential.randomScript(length: 30, using: &generator)
        let demands = PairDifferential.randomDemands(using: &generator)
        let (a, b) = (Subject(), Subject())
        let recorder = RecordingSubscriber<Int, TestError>(
            initialDemand: Differential.hubDemand(demands.initial), demandPerValue: .max(demands.perValue))
        a.combineLatest(b) { $0 * 10 + $1 }.subscribe(recorder)
        var sentA: [Int] = [], sentB: [Int] = []
        for step in script {
            switch step {
            case .sendA(let v): sentA.append(v); a.send(v)
            case .sendB(let v): sentB.append(v); b.send(v)
            case .finishA: a.send(completion: .finished)
            case .finishB: b.send(completion: .finished)
            case .failA: a.send(completion: .failure(.oops))
            case .failB: b.send(completion: .failure(.other(2)))
            case .request(let n): recorder.request(Differential.hubDemand(n))
            case .cancel: recorder.cancel()
            }
        }
        let values = recorder.values
        #expect(contractViolations(recorder.events).isEmpty, "seed \(seed): \(script)")
        // Each tuple holds a latest value of each source: the components follow the sources' order.
        #expect(followsInOrder(values.map { $0 / 10 }, sentA), "seed \(seed): \(script)")
        #expect(followsInOrder(values.map { $0 % 10 }, sentB), "seed \(seed): \(script)")
        // No two consecutive tuples are equal unless the source sent the same value again.
        #expect(values.count <= max(0, sentA.count + sentB.count - 1), "seed \(seed): \(script)")
    }
}

/// Whether `components` walks through `sent` in order, staying on a value or moving forward
/// (the latest value of a source can be reused by several tuples, never one from before it).
func followsInOrder(_ components: [Int], _ sent: [Int]) -> Bool {
    var position = -1
    for component in components {
        if position >= 0 && sent[position] == component { continue }
        guard let next = sent[(position + 1)...].firstIndex(of: component) else { return false }
        position = next
    }
    return true
}
