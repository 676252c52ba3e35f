import Testing
import HubEngine
import HubTesting

@Suite("Higher-order operators: switchToLatest")
struct SwitchToLatestTests {
    typealias Probe = DemandProbe<Int, TestError>

    @Test func followsTheNewestInnerAndIgnoresOlderOnes() {
        let outer = HubEngine.PassthroughSubject<Int, TestError>()
        let inners = (0..<2).map { _ in HubEngine.PassthroughSubject<Int, TestError>() }
        let recorder = outer.map { inners[$0] }.switchToLatest().record()
        outer.send(0)
        inners[0].send(1)
        outer.send(1)
        inners[0].send(2)
        inners[1].send(3)
        #expect(recorder.events == [.subscription, .value(1), .value(3)])
        #expect(inners[0].subscriberCount == 0)
        #expect(inners[1].subscriberCount == 1)
    }

    @Test func switchingCancelsThePreviousInnerAndCarriesOutstandingDemandOver() {
        let upstream = DemandProbe<Probe, TestError>()
        let first = Probe()
        let second = Probe()
        let recorder = upstream.switchToLatest().record(initialDemand: .max(3))
        #expect(upstream.requests == [.unlimited])
        upstream.send(first)
        #expect(first.requests == [.max(3)])
        first.send(1)
        upstream.send(second)
        #expect(first.cancellations == 1)
        #expect(second.requests == [.max(2)])
        recorder.request(.max(4))
        #expect(second.requests == [.max(2), .max(4)])
        #expect(first.requests == [.max(3)])
        second.send(2)
        #expect(recorder.values == [1, 2])
    }

    @Test func aNewInnerWithoutOutstandingDemandIsNotAskedForAnything() {
        let upstream = DemandProbe<Probe, TestError>()
        let inner = Probe()
        let recorder = upstream.switchToLatest().record(initialDemand: .max(1))
        let used = Probe()
        upstream.send(used)
        #expect(used.requests == [.max(1)])
        used.send(1)
        upstream.send(inner)
        #expect(inner.requests == [])
        recorder.request(.max(2))
        #expect(inner.requests == [.max(2)])
    }

    @Test func finishesOnlyWhenUpstreamAndCurrentInnerHaveFinished() {
        let outer = HubEngine.PassthroughSubject<Int, TestError>()
        let inners = (0..<2).map { _ in HubEngine.PassthroughSubject<Int, TestError>() }
        let recorder = outer.map { inners[$0] }.switchToLatest().record()
        outer.send(0)
        inners[0].send(completion: .finished)
        #expect(recorder.events == [.subscription])
        outer.send(1)
        outer.send(completion: .finished)
        #expect(recorder.events == [.subscription])
        inners[1].send(4)
        inners[1].send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(4), .finished])

        let idle = HubEngine.PassthroughSubject<HubEngine.PassthroughSubject<Int, TestError>, TestError>()
        let idleRecorder = idle.switchToLatest().record()
        idle.send(completion: .finished)
        #expect(idleRecorder.events == [.subscription, .finished])
    }

    @Test func cancelCancelsUpstreamAndCurrentInner() {
        let upstream = DemandProbe<Probe, TestError>()
        let inner = Probe()
        let recorder = upstream.switchToLatest().record()
        upstream.send(inner)
        recorder.cancel()
        recorder.cancel()
        #expect(upstream.cancellations == 1)
        #expect(inner.cancellations == 1)
        inner.send(1)
        inner.send(completion: .finished)
        upstream.send(completion: .finished)
        #expect(recorder.events == [.subscription])
    }

    @Test func innerFailureCancelsUpstreamAndIsDelivered() {
        let upstream = DemandProbe<Probe, TestError>()
        let inner = Probe()
        let recorder = upstream.switchToLatest().record()
        upstream.send(inner)
        inner.send(completion: .failure(.other(3)))
        #expect(recorder.events == [.subscription, .failure(.other(3))])
        #expect(upstream.cancellations == 1)
        upstream.send(Probe())
        upstream.send(completion: .finished)
        #expect(recorder.events == [.subscription, .failure(.other(3))])
    }

    @Test func upstreamFailureCancelsCurrentInnerAndIsDelivered() {
        let upstream = DemandProbe<Probe, TestError>()
        let inner = Probe()
        let recorder = upstream.switchToLatest().record()
        upstream.send(inner)
        upstream.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .failure(.oops)])
        #expect(inner.cancellations == 1)
        inner.send(1)
        #expect(recorder.events == [.subscription, .failure(.oops)])
    }

    @Test func coldInnersEmitWithinTheOutstandingDemand() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(3))
        [[1, 2], [3, 4], [5]].publisher.map { $0.publisher }.switchToLatest().subscribe(recorder)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .value(3)])
        // [3, 4] was cancelled for [5], which waits for demand; the upstream has finished.
        recorder.request(.max(5))
        #expect(recorder.events == [.subscription, .value(1), .value(2), .value(3), .value(5), .finished])
    }

    @Test func setFailureTypeOverloadsPickCombinesTypes() {
        typealias NeverSubject = HubEngine.PassthroughSubject<Int, Never>
        typealias FailingSubject = HubEngine.PassthroughSubject<Int, TestError>
        let neverOfFailing = HubEngine.PassthroughSubject<FailingSubject, Never>()
        let neverOfNever = HubEngine.PassthroughSubject<NeverSubject, Never>()
        let failingOfNever = HubEngine.PassthroughSubject<NeverSubject, TestError>()

        let a: HubEngine.Publishers.SwitchToLatest<FailingSubject, HubEngine.Publishers.SetFailureType<HubEngine.PassthroughSubject<FailingSubject, Never>, TestError>>
            = neverOfFailing.switchToLatest()
        let b: HubEngine.Publishers.SwitchToLatest<NeverSubject, HubEngine.PassthroughSubject<NeverSubject, Never>>
            = neverOfNever.switchToLatest()
        let c: HubEngine.Publishers.SwitchToLatest<
            HubEngine.Publishers.SetFailureType<NeverSubject, TestError>,
            HubEngine.Publishers.Map<HubEngine.PassthroughSubject<NeverSubject, TestError>, HubEngine.Publishers.SetFailureType<NeverSubject, TestError>>
        > = failingOfNever.switchToLatest()

        let recordA = a.record()
        let recordB = b.record()
        let recordC = c.record()
        let failing = FailingSubject()
        let never = NeverSubject()
        neverOfFailing.send(failing)
        neverOfNever.send(never)
        failingOfNever.send(never)
        never.send(1)
        failing.send(2)
        failing.send(completion: .failure(.oops))
        failingOfNever.send(completion: .failure(.other(1)))
        #expect(recordA.events == [.subscription, .value(2), .failure(.oops)])
        #expect(recordB.events == [.subscription, .value(1)])
        #expect(recordC.events == [.subscription, .value(1), .failure(.other(1))])
    }
}
