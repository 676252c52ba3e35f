import Testing
import HubEngine
import HubTesting

@Suite("Seeds: Publishers.AccumulateLatestMany")
struct AccumulateLatestManyTests {
    private func subjects(_ count: Int) -> [PassthroughSubject<Int, TestError>] {
        (0..<count).map { _ in PassthroughSubject<Int, TestError>() }
    }

    @Test func zeroPublishersEmitAnEmptyArrayThenFinishOnDemand() {
        let lazy = Publishers.accumulateLatestMany([PassthroughSubject<Int, TestError>]()).record(initialDemand: .none)
        #expect(lazy.events == [.subscription])
        lazy.request(.max(1))
        #expect(lazy.events == [.subscription, .value([]), .finished])
        let eager = Publishers.AccumulateLatestMany<Just<Int>>([]).record()
        #expect(eager.events == [.subscription, .value([]), .finished])
    }

    @Test func onePublisherEmitsEachValueAsAnArray() {
        let source = subjects(1)
        let recorder = Publishers.accumulateLatestMany(source).record()
        source[0].send(1)
        source[0].send(2)
        source[0].send(completion: .finished)
        #expect(recorder.events == [.subscription, .value([1]), .value([2]), .finished])
    }

    @Test func twoPublishersWaitForBothThenEmitInOrder() {
        let source = subjects(2)
        let recorder = Publishers.accumulateLatestMany(source).record()
        source[1].send(10)
        source[1].send(11)
        #expect(recorder.events == [.subscription])
        source[0].send(0)
        source[1].send(12)
        source[0].send(1)
        #expect(recorder.values == [[0, 11], [0, 12], [1, 12]])
    }

    @Test func threePublishers() {
        let source = subjects(3)
        let recorder = Publishers.accumulateLatestMany(source[0], source[1], source[2]).record()
        source[2].send(2)
        source[0].send(0)
        #expect(recorder.values.isEmpty)
        source[1].send(1)
        source[2].send(3)
        for subject in source { subject.send(completion: .finished) }
        #expect(recorder.events == [.subscription, .value([0, 1, 2]), .value([0, 1, 3]), .finished])
    }

    @Test func ninePublishersArrivingInReverseOrder() {
        let source = subjects(9)
        let recorder = Publishers.accumulateLatestMany(source).record()
        for index in (0..<9).reversed() { source[index].send(index * 10) }
        #expect(recorder.values == [Array(stride(from: 0, to: 90, by: 10))])
        source[4].send(-1)
        #expect(recorder.values.last == [0, 10, 20, 30, -1, 50, 60, 70, 80])
        for index in 0..<8 { source[index].send(completion: .finished) }
        #expect(!recorder.isCompleted)
        source[8].send(completion: .finished)
        #expect(recorder.events.last == .finished)
        #expect(recorder.values.count == 2)
    }

    @Test func nineSynchronousPublishers() {
        let recorder = Publishers.accumulateLatestMany((0..<9).map { Just($0) }).record()
        #expect(recorder.events == [.subscription, .value(Array(0..<9)), .finished])
    }

    @Test func upstreamsAreReadUnlimitedAndValuesCoalesce() {
        let probes = (0..<3).map { _ in DemandProbe<Int, TestError>() }
        let recorder = Publishers.accumulateLatestMany(probes).record(initialDemand: .max(1))
        #expect(probes.map(\.requests) == [[.unlimited], [.unlimited], [.unlimited]])
        for (index, probe) in probes.enumerated() { probe.send(index) }
        #expect(recorder.values == [[0, 1, 2]])
        probes[0].send(5)
        probes[2].send(7)
        #expect(recorder.values == [[0, 1, 2]])
        probes[1].send(completion: .finished)
        recorder.request(.max(2))
        #expect(recorder.values == [[0, 1, 2], [5, 1, 7]])
        #expect(probes.map(\.requests) == [[.unlimited], [.unlimited], [.unlimited]])
    }

    /// The latest of each, not the first values an upstream buffered. Failed before
    /// the fix (`[[1, 2, 3]]`: the upstreams were asked for one value each).
    @Test func withoutDemandOnlyTheLatestOfEachIsDelivered() {
        let source = subjects(3)
        let recorder = Publishers.accumulateLatestMany(source.map { $0.buffer(size: 10, prefetch: .byRequest, whenFull: .dropOldest) })
            .record(initialDemand: .none)
        source[0].send(1); source[1].send(2); source[2].send(3); source[0].send(4)
        recorder.request(.max(1))
        #expect(recorder.values == [[4, 2, 3]])
        recorder.request(.max(1))
        #expect(recorder.values == [[4, 2, 3]])
    }

    @Test func anUpstreamFinishingWithoutAValueMeansNoOutputButFinishWhenAllFinish() {
        let source = subjects(2)
        let recorder = Publishers.accumulateLatestMany(source).record()
        source[0].send(completion: .finished)
        source[1].send(1)
        source[1].send(completion: .finished)
        #expect(recorder.events == [.subscription, .finished])
    }

    @Test func failureCancelsTheOthers() {
        let probes = (0..<4).map { _ in DemandProbe<Int, TestError>() }
        let recorder = Publishers.accumulateLatestMany(probes).record()
        probes[1].send(completion: .finished)
        probes[2].send(completion: .failure(.other(2)))
        #expect(probes.map(\.cancellations) == [1, 0, 0, 1])
        probes[0].send(1)
        #expect(recorder.events == [.subscription, .failure(.other(2))])
    }

    @Test func cancelCancelsEveryUpstreamOnce() {
        let probes = (0..<9).map { _ in DemandProbe<Int, TestError>() }
        let recorder = Publishers.accumulateLatestMany(probes).record()
        recorder.cancel()
        recorder.cancel()
        #expect(probes.map(\.cancellations) == Array(repeating: 1, count: 9))
        for probe in probes { probe.send(1) }
        #expect(recorder.events == [.subscription])
    }

    @Test func cancelFromInsideReceive() {
        let recorder = RecordingSubscriber<[Int], Never>(initialDemand: .unlimited)
        recorder.onValue = { [unowned recorder] _ in
            recorder.cancel()
            return .none
        }
        var subscribed = 0
        let publishers = (0..<3).map { value in
            SeedLazyPublisher { () -> Just<Int> in
                subscribed += 1
                return Just(value)
            }
        }
        Publishers.accumulateLatestMany(publishers).subscribe(recorder)
        #expect(recorder.events == [.subscription, .value([0, 1, 2])])
        #expect(subscribed == 3)
        let single = RecordingSubscriber<[Int], Never>(initialDemand: .unlimited)
        single.onValue = { [unowned single] _ in
            single.cancel()
            return .none
        }
        subscribed = 0
        Publishers.accumulateLatestMany([publishers[0]]).subscribe(single)
        #expect(single.events == [.subscription, .value([0])])
    }

    @Test func synchronousFailureStopsSubscribingTheRest() {
        let later = PassthroughSubject<Int, TestError>()
        let recorder = Publishers.accumulateLatestMany([
            Publishers.Sequence<[Int], TestError>(sequence: [1]).eraseToAnyPublisher(),
            Fail<Int, TestError>(error: .oops).eraseToAnyPublisher(),
            later.eraseToAnyPublisher(),
        ]).record()
        #expect(recorder.events == [.subscription, .failure(.oops)])
        #expect(later.subscriberCount == 0)
    }

    @Test func reentrantSendFromReceive() {
        let source = (0..<2).map { _ in PassthroughSubject<Int, Never>() }
        let recorder = RecordingSubscriber<[Int], Never>(initialDemand: .unlimited)
        recorder.onValue = { values in
            if values[0] < 2 { source[0].send(values[0] + 1) }
            return .none
        }
        Publishers.accumulateLatestMany(source).subscribe(recorder)
        source[1].send(9)
        source[0].send(0)
        #expect(recorder.values == [[0, 9], [1, 9], [2, 9]])
    }
}
