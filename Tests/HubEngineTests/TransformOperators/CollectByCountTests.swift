import HubEngine
import Testing
import HubTesting

/// collect(_:): downstream demand n becomes n × count upstream, as Combine's CollectByCount.
@Suite("TransformOperators: collect by count")
struct CollectByCountTests {
    typealias Probe = DemandProbe<Int, TestError>

    @Test func downstreamDemandIsMultipliedByTheCount() {
        let probe = Probe()
        let recorder = probe.collect(3).record(initialDemand: .max(2))
        #expect(probe.requests == [.max(6)])
        recorder.request(.unlimited)
        #expect(probe.requests == [.max(6), .unlimited])
        recorder.request(.none)
        #expect(probe.requests == [.max(6), .unlimited])
    }

    @Test func demandReturnedForABatchIsMultipliedToo() {
        let probe = Probe()
        _ = probe.collect(3).record(initialDemand: .max(1), demandPerValue: .max(2))
        #expect(probe.send(1) == .none)
        #expect(probe.send(2) == .none)
        #expect(probe.send(3) == .max(6))
    }

    @Test func emitsFullBatchesThenThePartialOneOnFinish() {
        let probe = Probe()
        let recorder = probe.collect(2).record()
        for v in 1...5 { probe.send(v) }
        #expect(recorder.events == [.subscription, .value([1, 2]), .value([3, 4])])
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value([1, 2]), .value([3, 4]), .value([5]), .finished])
    }

    @Test func finishWithAnEmptyBufferSendsOnlyFinished() {
        let probe = Probe()
        let recorder = probe.collect(2).record()
        probe.send(1)
        probe.send(2)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value([1, 2]), .finished])
    }

    @Test func failureDiscardsThePartialBatch() {
        let probe = Probe()
        let recorder = probe.collect(3).record()
        probe.send(1)
        probe.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .failure(.oops)])
    }

    @Test func cancelReachesUpstreamOnceAndDropsTheBuffer() {
        let probe = Probe()
        let recorder = probe.collect(2).record()
        probe.send(1)
        recorder.cancel()
        recorder.cancel()
        #expect(probe.cancellations == 1)
        probe.send(2)
        probe.send(completion: .finished)
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription])
        #expect(probe.requests == [.unlimited])
    }

    @Test func cancelFromInsideReceiveStopsEverything() {
        let probe = Probe()
        let recorder = RecordingSubscriber<[Int], TestError>(initialDemand: .unlimited)
        recorder.onValue = { [unowned recorder] _ in
            recorder.cancel()
            return .max(1)
        }
        probe.collect(1).subscribe(recorder)
        #expect(probe.send(1) == .none)
        probe.send(2)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value([1])])
    }

    @Test func sequenceSourceHonoursBatchDemand() {
        let recorder = RecordingSubscriber<[Int], Never>(initialDemand: .max(1))
        (1...7).publisher.collect(3).subscribe(recorder)
        #expect(recorder.events == [.subscription, .value([1, 2, 3])])
        recorder.request(.max(2))
        #expect(recorder.events == [.subscription, .value([1, 2, 3]), .value([4, 5, 6]), .value([7]), .finished])
    }
}
