import Testing
import HubEngine
import HubTesting
import OpenCombine

@Suite("Higher-order operators: flatMap")
struct FlatMapTests {
    typealias Probe = DemandProbe<Int, TestError>

    @Test func mergesInnerValuesAndFinishesAfterUpstreamAndEveryInner() {
        let outer = HubEngine.PassthroughSubject<Int, TestError>()
        let inners = (0..<2).map { _ in HubEngine.PassthroughSubject<Int, TestError>() }
        let recorder = outer.flatMap { inners[$0] }.record()
        outer.send(0)
        outer.send(1)
        inners[0].send(10)
        inners[1].send(20)
        inners[0].send(11)
        inners[0].send(completion: .finished)
        outer.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(10), .value(20), .value(11)])
        inners[1].send(21)
        inners[1].send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(10), .value(20), .value(11), .value(21), .finished])
    }

    @Test func maxPublishersOneRequestsExactlyOneUpstreamAndOneMorePerFinishedInner() {
        let upstream = Probe()
        let inners = (0..<3).map { _ in Probe() }
        let recorder = upstream.flatMap(maxPublishers: .max(1)) { inners[$0] }.record(initialDemand: .max(1))
        #expect(upstream.requests == [.max(1)])
        upstream.send(0)
        #expect(upstream.requests == [.max(1)])
        inners[0].send(completion: .finished)
        #expect(upstream.requests == [.max(1), .max(1)])
        upstream.send(1)
        inners[1].send(completion: .finished)
        #expect(upstream.requests == [.max(1), .max(1), .max(1)])
        #expect(recorder.events == [.subscription])
    }

    @Test func unlimitedMaxPublishersRequestsUnlimitedOnceAndNothingMore() {
        let upstream = Probe()
        let inner = Probe()
        _ = upstream.flatMap { _ in inner }.record(initialDemand: .max(1))
        upstream.send(0)
        inner.send(completion: .finished)
        #expect(upstream.requests == [.unlimited])
    }

    @Test func innersAreAskedForOneValueAtATimeWithinDownstreamDemand() {
        let upstream = Probe()
        let inner = Probe()
        let recorder = upstream.flatMap { _ in inner }.record(initialDemand: .max(2))
        upstream.send(0)
        #expect(inner.requests == [.max(1)])
        #expect(inner.send(1) == .max(1))
        #expect(inner.send(2) == .max(1))
        // No downstream demand left: the value is buffered and no more is asked for.
        #expect(inner.send(3) == .none)
        #expect(recorder.values == [1, 2])
        recorder.request(.max(1))
        #expect(recorder.values == [1, 2, 3])
        #expect(inner.requests == [.max(1), .max(1)])
    }

    @Test func unlimitedDownstreamDemandGivesInnersUnlimitedDemand() {
        let upstream = Probe()
        let first = Probe()
        let second = Probe()
        let publishers = [first, second]
        let recorder = upstream.flatMap { publishers[$0] }.record(initialDemand: .max(1))
        upstream.send(0)
        #expect(first.requests == [.max(1)])
        recorder.request(.unlimited)
        #expect(first.requests == [.max(1), .unlimited])
        upstream.send(1)
        #expect(second.requests == [.unlimited])
        #expect(second.send(5) == .none)
        #expect(recorder.values == [5])
    }

    @Test func bufferedValuesAreDeliveredInArrivalOrderAndCompletionWaitsForThem() {
        let outer = HubEngine.PassthroughSubject<Int, TestError>()
        let inners = (0..<2).map { _ in HubEngine.PassthroughSubject<Int, TestError>() }
        let recorder = outer.flatMap { inners[$0] }.record(initialDemand: .none)
        outer.send(0)
        outer.send(1)
        inners[1].send(20)
        inners[0].send(10)
        inners[0].send(11) // the inner was asked for one value only: dropped by the subject
        inners[0].send(completion: .finished)
        inners[1].send(completion: .finished)
        outer.send(completion: .finished)
        #expect(recorder.events == [.subscription])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(20)])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(20), .value(10), .finished])
    }

    /// While an inner is asked for one more value during the buffer drain, what it sends at once
    /// goes behind the values already buffered (as OpenCombine and Combine do).
    @Test func synchronousInnerValuesDuringDrainQueueBehindBufferedValues() {
        let run = DifferentialRun<Int, Never>(initialDemand: 0, demandPerValue: 0)
        let (hub, oc) = (run.hub, run.oc)
        [2, 3].publisher.flatMap { n in (0..<n).map { 10 * n + $0 }.publisher }.subscribe(hub)
        OpenCombine.Publishers.Sequence<[Int], Never>(sequence: [2, 3])
            .flatMap { n in OpenCombine.Publishers.Sequence<[Int], Never>(sequence: (0..<n).map { 10 * n + $0 }) }
            .subscribe(oc)
        hub.request(.max(3))
        oc.request(.max(3))
        #expect(hub.events == oc.events)
        #expect(hub.values == [20, 30, 21])
        hub.request(.unlimited)
        oc.request(.unlimited)
        #expect(hub.events == oc.events)
        #expect(hub.values == [20, 30, 21, 31, 32])
        #expect(hub.isCompleted)
    }

    @Test func cancelCancelsUpstreamAndEveryInnerOnceAndStopsDelivery() {
        let upstream = Probe()
        let inners = (0..<2).map { _ in Probe() }
        let recorder = upstream.flatMap { inners[$0] }.record()
        upstream.send(0)
        upstream.send(1)
        recorder.cancel()
        recorder.cancel()
        #expect(upstream.cancellations == 1)
        #expect(inners.map(\.cancellations) == [1, 1])
        inners[0].send(1)
        inners[1].send(completion: .failure(.oops))
        upstream.send(completion: .finished)
        #expect(recorder.events == [.subscription])
    }

    @Test func innerFailureCancelsTheOtherInnersAndTheUpstream() {
        let upstream = Probe()
        let inners = (0..<2).map { _ in Probe() }
        let recorder = upstream.flatMap { inners[$0] }.record()
        upstream.send(0)
        upstream.send(1)
        inners[0].send(1)
        inners[1].send(completion: .failure(.other(1)))
        #expect(recorder.events == [.subscription, .value(1), .failure(.other(1))])
        #expect(inners.map(\.cancellations) == [1, 0])
        #expect(upstream.cancellations == 1)
        inners[0].send(2)
        inners[0].send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1), .failure(.other(1))])
    }

    @Test func upstreamFailureCancelsInnersAndIsDeliveredAtOnce() {
        let upstream = Probe()
        let inner = Probe()
        let recorder = upstream.flatMap { _ in inner }.record(initialDemand: .none)
        upstream.send(0)
        inner.send(7) // buffered: no demand
        upstream.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .failure(.oops)])
        #expect(inner.cancellations == 1)
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .failure(.oops)])
    }

    @Test func requestOfNoneIsHarmlessAndReentrantRequestsAreHonoured() {
        let outer = HubEngine.PassthroughSubject<Int, TestError>()
        let inner = HubEngine.PassthroughSubject<Int, TestError>()
        let recorder = outer.flatMap { _ in inner }.record(initialDemand: .none)
        recorder.request(.none)
        recorder.onValue = { [unowned recorder] _ in
            recorder.request(.max(1))
            return .none
        }
        recorder.request(.max(1))
        outer.send(0)
        inner.send(1)
        inner.send(2)
        inner.send(3)
        #expect(recorder.values == [1, 2, 3])
    }

    @Test func setFailureTypeOverloadsPickCombinesTypes() {
        let neverOuter = HubEngine.PassthroughSubject<Int, Never>()
        let failingInner = HubEngine.PassthroughSubject<Int, TestError>()
        let neverInner = HubEngine.PassthroughSubject<Int, Never>()
        let failingOuter = HubEngine.PassthroughSubject<Int, TestError>()

        let a: HubEngine.Publishers.FlatMap<HubEngine.PassthroughSubject<Int, TestError>,
                                          HubEngine.Publishers.SetFailureType<HubEngine.PassthroughSubject<Int, Never>, TestError>>
            = neverOuter.flatMap { _ in failingInner }
        let b: HubEngine.Publishers.FlatMap<HubEngine.PassthroughSubject<Int, Never>, HubEngine.PassthroughSubject<Int, Never>>
            = neverOuter.flatMap { _ in neverInner }
        let c: HubEngine.Publishers.FlatMap<HubEngine.Publishers.SetFailureType<HubEngine.PassthroughSubject<Int, Never>, TestError>,
                                          HubEngine.PassthroughSubject<Int, TestError>>
            = failingOuter.flatMap(maxPublishers: .max(1)) { _ in neverInner }

        let recordA = a.record()
        let recordB = b.record()
        let recordC = c.record()
        #expect(c.maxPublishers == .max(1))
        neverOuter.send(0)
        failingOuter.send(0)
        neverInner.send(5)
        failingInner.send(6)
        failingInner.send(completion: .failure(.oops))
        failingOuter.send(completion: .failure(.other(2)))
        #expect(recordA.events == [.subscription, .value(6), .failure(.oops)])
        #expect(recordB.events == [.subscription, .value(5)])
        #expect(recordC.events == [.subscription, .value(5), .failure(.other(2))])
    }

    @Test func innerPublishersThatCompleteAtOnceWork() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
        [1, 2, 3].publisher.flatMap(maxPublishers: .max(1)) { Just($0 * 10) }.subscribe(recorder)
        #expect(recorder.events == [.subscription, .value(10), .value(20)])
        recorder.request(.max(5))
        #expect(recorder.events == [.subscription, .value(10), .value(20), .value(30), .finished])
    }
}
