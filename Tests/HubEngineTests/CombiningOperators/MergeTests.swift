import Testing
import HubEngine
import HubTesting

@Suite("CombiningOperators: merge")
struct MergeTests {
    typealias Subject = HubEngine.PassthroughSubject<Int, TestError>
    typealias Probe = DemandProbe<Int, TestError>

    // MARK: Event histories (marbles written from Combine's documentation)

    /// a: -1---2--|
    /// b: ---10---20--|
    /// =: -1-10-2-20--|
    @Test func interleavesValuesAsTheyArriveAndFinishesWhenAllHaveFinished() {
        let (a, b) = (Subject(), Subject())
        let recorder = a.merge(with: b).record()
        a.send(1); b.send(10); a.send(2)
        a.send(completion: .finished)
        b.send(20)
        #expect(recorder.events == [.subscription, .value(1), .value(10), .value(2), .value(20)])
        b.send(completion: .finished)
        #expect(recorder.events.last == .finished)
    }

    @Test func aFailureEndsTheMergeAtOnceAndCancelsTheOthers() {
        let (a, b, c) = (Probe(), Probe(), Probe())
        let recorder = a.merge(with: b, c).record()
        a.send(1)
        b.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .value(1), .failure(.oops)])
        #expect([a, b, c].map(\.cancellations) == [1, 0, 1])
        a.send(2); c.send(3); c.send(completion: .finished)
        #expect(recorder.events.count == 3)
    }

    @Test func aFailureWhileSubscribingComesRightAfterTheSubscriptionAndCancelsTheRest() {
        let probe = Probe()
        let recorder = HubEngine.Fail<Int, TestError>(error: .oops).merge(with: probe).record()
        #expect(recorder.events == [.subscription, .failure(.oops)])
        #expect(probe.cancellations == 1)
        #expect(probe.requests.isEmpty)
    }

    @Test func everyArityAndMergeManyInterleaveInUpstreamOrder() {
        func run<P: HubEngine.Publisher>(_ publisher: P) -> [RecordedEvent<Int, Never>] where P.Output == Int, P.Failure == Never {
            let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
            publisher.subscribe(recorder)
            return recorder.events
        }
        func expected(_ n: Int) -> [RecordedEvent<Int, Never>] {
            [.subscription] + (1...n).map { .value($0) } + [.finished]
        }
        let p = (1...8).map { [$0].publisher }
        #expect(run(p[0].merge(with: p[1])) == expected(2))
        #expect(run(p[0].merge(with: p[1], p[2])) == expected(3))
        #expect(run(p[0].merge(with: p[1], p[2], p[3])) == expected(4))
        #expect(run(p[0].merge(with: p[1], p[2], p[3], p[4])) == expected(5))
        #expect(run(p[0].merge(with: p[1], p[2], p[3], p[4], p[5])) == expected(6))
        #expect(run(p[0].merge(with: p[1], p[2], p[3], p[4], p[5], p[6])) == expected(7))
        #expect(run(p[0].merge(with: p[1], p[2], p[3], p[4], p[5], p[6], p[7])) == expected(8))
        #expect(run(Publishers.Merge8(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7])) == expected(8))
        #expect(run(Publishers.MergeMany(p)) == expected(8))
        #expect(run(Publishers.MergeMany(p[0], p[1], p[2])) == expected(3))
        #expect(run(Publishers.MergeMany(p[0], p[1]).merge(with: p[2])) == expected(3))
    }

    @Test func mergeManyOfNothingFinishesOnTheFirstRequest() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
        Publishers.MergeMany([Publishers.Sequence<[Int], Never>]()).subscribe(recorder)
        #expect(recorder.events == [.subscription])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .finished])
    }

    // MARK: Demand

    @Test func eachUpstreamHasAtMostOneValueOutstandingWhileDemandIsFinite() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.merge(with: b).record(initialDemand: .max(1))
        #expect(a.requests == [.max(1)])
        #expect(b.requests == [.max(1)])
        #expect(a.send(1) == .max(1))          // delivered: a may send one more
        #expect(b.send(10) == .none)           // no demand: waits, b is asked for nothing
        #expect(recorder.values == [1])
        recorder.request(.max(1))               // the waiting value goes out, b is asked for one more
        #expect(recorder.values == [1, 10])
        #expect(b.requests == [.max(1), .max(1)])
        #expect(a.requests == [.max(1)])
        #expect(a.totalDemand == .max(1) && b.totalDemand == .max(2))
    }

    @Test func aSmallDemandNeverBecomesUnlimitedUpstream() {
        let probes = (0..<5).map { _ in Probe() }
        let recorder = Publishers.MergeMany(probes).record(initialDemand: .max(3))
        let answers = probes.enumerated().map { index, probe in probe.send(index) }
        #expect(answers == [.max(1), .max(1), .max(1), .none, .none])
        #expect(recorder.values == [0, 1, 2])
        recorder.request(.max(2))
        #expect(recorder.values == [0, 1, 2, 3, 4])
        #expect(probes.map(\.requests) == [[.max(1)], [.max(1)], [.max(1)], [.max(1), .max(1)], [.max(1), .max(1)]])
    }

    @Test func anUnlimitedDownstreamMakesEveryUpstreamUnlimited() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.merge(with: b).record(initialDemand: .unlimited)
        #expect(a.requests == [.max(1), .unlimited])
        #expect(b.requests == [.max(1), .unlimited])
        a.send(1); a.send(2); b.send(3)
        #expect(recorder.values == [1, 2, 3])
    }

    @Test func anUnlimitedAnswerAlsoWidensTheUpstreams() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.merge(with: b).record(initialDemand: .max(1), demandPerValue: .unlimited)
        a.send(1)
        #expect(a.requests.last == .unlimited)
        #expect(b.requests == [.max(1), .unlimited])
        b.send(2); b.send(3)
        #expect(recorder.values == [1, 2, 3])
    }

    @Test func waitingValuesGoOutInUpstreamOrderAndDelayTheFinish() {
        let (a, b) = (Subject(), Subject())
        let recorder = a.merge(with: b).record(initialDemand: .none)
        b.send(20)
        a.send(10)
        a.send(11)                              // a already has one outstanding value: not asked, dropped by the subject
        a.send(completion: .finished)
        b.send(completion: .finished)
        #expect(recorder.events == [.subscription])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(10)])
        recorder.request(.max(5))
        #expect(recorder.events == [.subscription, .value(10), .value(20), .finished])
    }

    @Test func coldUpstreamsProduceOnlyWhatIsDemanded() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
        [1, 2, 3].publisher.merge(with: [10, 20].publisher).subscribe(recorder)
        #expect(recorder.events == [.subscription, .value(1), .value(10)])
        recorder.request(.max(3))
        #expect(recorder.events == [.subscription, .value(1), .value(10), .value(2), .value(20), .value(3), .finished])
    }

    // MARK: Cancellation and reentrancy

    @Test func cancelCancelsEveryUpstreamOnceAndStopsDelivery() {
        let probes = (0..<8).map { _ in Probe() }
        let recorder = Publishers.Merge8(probes[0], probes[1], probes[2], probes[3],
                                         probes[4], probes[5], probes[6], probes[7]).record()
        recorder.cancel(); recorder.cancel()
        #expect(probes.map(\.cancellations) == Array(repeating: 1, count: 8))
        for probe in probes { probe.send(1); probe.send(completion: .finished) }
        #expect(recorder.events == [.subscription])
    }

    @Test func cancellingFromInsideReceiveStopsTheWaitingValues() {
        let (a, b) = (Subject(), Subject())
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
        a.merge(with: b).subscribe(recorder)
        a.send(1); b.send(2)
        recorder.onValue = { _ in recorder.cancel(); return .none }
        recorder.request(.max(5))
        #expect(recorder.events == [.subscription, .value(1)])
    }

    @Test func valuesSentFromInsideReceiveWaitAndGoOutInUpstreamOrderNotNested() {
        let (a, b) = (Subject(), Subject())
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        var depth = 0
        var maxDepth = 0
        recorder.onValue = { value in
            depth += 1
            maxDepth = max(maxDepth, depth)
            if value == 1 { b.send(2); a.send(3) }
            depth -= 1
            return .none
        }
        a.merge(with: b).subscribe(recorder)
        a.send(1)
        // 2 and 3 wait together until 1 has been handled; the book: values provided at the
        // same time are interleaved "in the order upstream publishers are specified".
        #expect(recorder.values == [1, 3, 2])
        #expect(maxDepth == 1)
    }

    @Test func aRequestFromInsideReceiveIsHonoured() {
        let (a, b) = (Subject(), Subject())
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
        a.merge(with: b).subscribe(recorder)
        a.send(1); b.send(2)
        recorder.onValue = { _ in recorder.request(.max(1)); return .none }
        recorder.request(.max(1))
        #expect(recorder.values == [1, 2])
    }

    @Test func zeroRequestIsANoOp() {
        let (a, b) = (Probe(), Probe())
        let recorder = a.merge(with: b).record(initialDemand: .none)
        a.send(1)
        recorder.request(.none)
        #expect(recorder.events == [.subscription])
        #expect(a.requests == [.max(1)])
    }

    // MARK: Random scripts: the contract holds and each source's values keep their order

    @Test(arguments: 0..<150)
    func randomScriptsKeepTheContractAndTheOrderOfEachSource(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed) &+ 40_000)
        let script = PairDifferential.randomScript(length: 30, using: &generator)
        let demands = PairDifferential.randomDemands(using: &generator)
        let (a, b) = (Subject(), Subject())
        let recorder = RecordingSubscriber<Int, TestError>(
            initialDemand: Differential.hubDemand(demands.initial), demandPerValue: .max(demands.perValue))
        // a sends 0...9, b sends 100...109, so each value tells its source.
        a.merge(with: b.map { $0 + 100 }).subscribe(recorder)
        var sentA: [Int] = [], sentB: [Int] = []
        var granted = demands.initial ?? Int.max
        for step in script {
            switch step {
            case .sendA(let v): sentA.append(v); a.send(v)
            case .sendB(let v): sentB.append(v + 100); b.send(v)
            case .finishA: a.send(completion: .finished)
            case .finishB: b.send(completion: .finished)
            case .failA: a.send(completion: .failure(.oops))
            case .failB: b.send(completion: .failure(.other(2)))
            case .request(let n): granted = n.map { granted == Int.max ? Int.max : granted + $0 } ?? Int.max; recorder.request(Differential.hubDemand(n))
            case .cancel: recorder.cancel()
            }
        }
        let values = recorder.values
        #expect(contractViolations(recorder.events).isEmpty, "seed \(seed): \(script)")
        #expect(isSubsequence(values.filter { $0 < 100 }, of: sentA), "seed \(seed): \(script)")
        #expect(isSubsequence(values.filter { $0 >= 100 }, of: sentB), "seed \(seed): \(script)")
        if granted != Int.max {
            #expect(values.count <= granted + demands.perValue * values.count, "seed \(seed): \(script)")
        }
    }
}

/// Whether `sub` appears in `sequence` in order (not necessarily contiguously).
func isSubsequence(_ sub: [Int], of sequence: [Int]) -> Bool {
    var iterator = sequence.makeIterator()
    return sub.allSatisfy { wanted in
        while let next = iterator.next() { if next == wanted { return true } }
        return false
    }
}
