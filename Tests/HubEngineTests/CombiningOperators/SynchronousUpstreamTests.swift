import Testing
import HubEngine
import HubTesting

/// Every combining operator with upstreams that complete, fail or send while they
/// are being subscribed (`Empty`, `Just`, `Fail`, a sequence), and with values sent back into
/// an upstream from inside the downstream's `receive(_:)`.
@Suite("CombiningOperators: synchronous upstreams and reentrant sends")
struct SynchronousUpstreamTests {
    typealias Subject = HubEngine.PassthroughSubject<Int, TestError>

    private func empty() -> AnyPublisher<Int, TestError> { Empty<Int, TestError>().eraseToAnyPublisher() }
    private func just(_ v: Int) -> AnyPublisher<Int, TestError> { Just(v).setFailureType(to: TestError.self).eraseToAnyPublisher() }

    // MARK: merge

    /// Failed before the fix: `[.subscription, .finished]` (the empty input, finishing while
    /// being subscribed, was taken for the last one).
    @Test func mergeOfEmptyAndJustEmitsTheValueThenFinishes() {
        let recorder = empty().merge(with: just(7)).record()
        #expect(recorder.events == [.subscription, .value(7), .finished])
        let lazy = empty().merge(with: just(7)).record(initialDemand: .none)
        #expect(lazy.events == [.subscription])
        lazy.request(.max(1))
        #expect(lazy.events == [.subscription, .value(7), .finished])
    }

    /// Failed before the fix: the merge finished at once although `subject` is live.
    @Test func mergeOfEmptyAndALiveSubjectStaysLive() {
        let subject = Subject()
        let recorder = empty().merge(with: subject).record()
        #expect(recorder.events == [.subscription])
        subject.send(1)
        #expect(recorder.events == [.subscription, .value(1)])
        subject.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1), .finished])
    }

    @Test func synchronousInputsInEveryPositionOfAMergeMany() {
        let subject = Subject()
        let inputs = [empty(), just(1), empty(), subject.eraseToAnyPublisher(), just(2), empty()]
        let recorder = Publishers.MergeMany(inputs).record(initialDemand: .max(1))
        #expect(recorder.events == [.subscription, .value(1)])
        recorder.request(.max(1))
        #expect(recorder.values == [1, 2])
        recorder.request(.max(1))
        subject.send(3)
        #expect(recorder.values == [1, 2, 3])
        #expect(!recorder.isCompleted, "the subject is still live")
        subject.send(completion: .finished)
        #expect(recorder.events.last == .finished)
    }

    @Test func mergeOfOnlySynchronousInputsFinishesAfterTheirValues() {
        #expect(Publishers.MergeMany([empty(), empty()]).record().events == [.subscription, .finished])
        #expect(Publishers.MergeMany([just(1), empty(), just(2)]).record().events
                == [.subscription, .value(1), .value(2), .finished])
    }

    @Test func aFailureWhileSubscribingFailsTheMergeAndDropsWhatWaitedForDemand() {
        // Upstreams subscribe before the downstream receives the subscription: the value of
        // `just(1)` waits for demand that never comes before the failure (as in Zip).
        let recorder = just(1).merge(with: Fail<Int, TestError>(error: .oops)).record()
        #expect(recorder.events == [.subscription, .failure(.oops)])
    }

    @Test func mergeDeliversAReentrantSendAfterTheValueBeingDelivered() {
        let (a, b) = (Subject(), Subject())
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        recorder.onValue = { value in
            if value < 3 { a.send(value + 1) }
            if value == 3 { b.send(10) }
            return .none
        }
        a.merge(with: b).subscribe(recorder)
        a.send(1)
        #expect(recorder.values == [1, 2, 3, 10])
    }

    // MARK: combineLatest and zip

    @Test func combineLatestWaitsForTheLiveInputWhenAnotherFinishesWhileSubscribing() {
        let subject = Subject()
        let recorder = just(1).combineLatest(subject).map { [$0.0, $0.1] }.record()
        subject.send(2)
        #expect(recorder.events == [.subscription, .value([1, 2])])
        subject.send(completion: .finished)
        #expect(recorder.events.last == .finished)
        let stuck = empty().combineLatest(subject).map { [$0.0, $0.1] }.record()
        #expect(stuck.events == [.subscription, .finished], "the subject had finished already")
        let other = Subject()
        let live = empty().combineLatest(other).map { [$0.0, $0.1] }.record()
        other.send(1)
        #expect(live.events == [.subscription], "no tuple without a value of each, and not finished yet")
        other.send(completion: .finished)
        #expect(live.events == [.subscription, .finished])
    }

    @Test func combineLatestAndZipOfSynchronousInputs() {
        #expect(just(1).combineLatest(just(2)).map { [$0.0, $0.1] }.record().events
                == [.subscription, .value([1, 2]), .finished])
        #expect(just(1).zip(just(2)).map { [$0.0, $0.1] }.record().events
                == [.subscription, .value([1, 2]), .finished])
        #expect(Fail<Int, TestError>(error: .oops).combineLatest(just(2)).map { [$0.0, $0.1] }.record().events
                == [.subscription, .failure(.oops)])
    }

    @Test func zipOfAnInputThatFinishedEmptyFinishesAtOnce() {
        let subject = Subject()
        let recorder = empty().zip(subject).map { [$0.0, $0.1] }.record()
        #expect(recorder.events == [.subscription, .finished], "no tuple can ever be formed")
        #expect(subject.subscriberCount == 0)
    }

    /// A value sent into an upstream while the downstream handles a tuple, with demand left,
    /// gives its own tuple. Failed before the fix (the reentrant value only replaced the latest).
    @Test func combineLatestEmitsTheTupleOfAReentrantSend() {
        let (a, b) = (Subject(), Subject())
        let recorder = RecordingSubscriber<[Int], TestError>(initialDemand: .unlimited)
        recorder.onValue = { tuple in
            if tuple[0] < 3 { a.send(tuple[0] + 1) }
            return .none
        }
        a.combineLatest(b).map { [$0.0, $0.1] }.subscribe(recorder)
        b.send(0)
        a.send(1)
        #expect(recorder.values == [[1, 0], [2, 0], [3, 0]])
    }

    @Test func combineLatestDropsTheTupleOfAReentrantSendWithoutDemand() {
        let (a, b) = (Subject(), Subject())
        let recorder = RecordingSubscriber<[Int], TestError>(initialDemand: .max(2))
        recorder.onValue = { tuple in
            if tuple[0] < 3 { a.send(tuple[0] + 1) }
            return .none
        }
        a.combineLatest(b).map { [$0.0, $0.1] }.subscribe(recorder)
        b.send(0)
        a.send(1)
        // `a` was asked for 2 values (combineLatest passes requests through): its third value
        // is dropped by the subject itself.
        #expect(recorder.values == [[1, 0], [2, 0]])
        b.send(5)
        #expect(recorder.values == [[1, 0], [2, 0]], "no demand left: 5 only replaces b's latest")
        recorder.request(.max(1))
        b.send(6)
        #expect(recorder.values == [[1, 0], [2, 0], [2, 6]])
    }

    // MARK: the seed combinators

    @Test func reduceLatestAndAccumulateLatestWithSynchronousInputs() {
        let subject = Subject()
        let reduced = empty().reduceLatest(just(1), subject) { [$0 ?? -1, $1 ?? -1, $2 ?? -1] }.record()
        #expect(reduced.events == [.subscription, .value([-1, 1, -1])])
        subject.send(2)
        subject.send(completion: .finished)
        #expect(reduced.events == [.subscription, .value([-1, 1, -1]), .value([-1, 1, 2]), .finished])

        let other = Subject()
        let accumulated = Publishers.accumulateLatestMany([just(1), other.eraseToAnyPublisher(), just(3)]).record()
        other.send(2)
        #expect(accumulated.events == [.subscription, .value([1, 2, 3])])
        other.send(completion: .finished)
        #expect(accumulated.events.last == .finished)
    }

    // MARK: flatMap and switchToLatest

    @Test func flatMapInnersThatFinishOrFailWhileSubscribed() {
        let recorder = [1, 2, 3].publisher.setFailureType(to: TestError.self)
            .flatMap { v -> AnyPublisher<Int, TestError> in v == 2 ? Empty().eraseToAnyPublisher() : Just(v * 10).setFailureType(to: TestError.self).eraseToAnyPublisher() }
            .record()
        #expect(recorder.events == [.subscription, .value(10), .value(30), .finished])
        let limited = [1, 2, 3].publisher.setFailureType(to: TestError.self)
            .flatMap(maxPublishers: .max(1)) { v -> AnyPublisher<Int, TestError> in Empty().eraseToAnyPublisher() }
            .record()
        #expect(limited.events == [.subscription, .finished], "each finished inner lets the next one in")
        let failing = [1, 2].publisher.setFailureType(to: TestError.self)
            .flatMap { _ in Fail<Int, TestError>(error: .oops) }
            .record()
        #expect(failing.events == [.subscription, .failure(.oops)])
    }

    @Test func switchToLatestInnersThatFinishWhileSubscribed() {
        let upstream = HubEngine.PassthroughSubject<AnyPublisher<Int, TestError>, TestError>()
        let recorder = upstream.switchToLatest().record()
        upstream.send(empty())
        upstream.send(just(1))
        #expect(recorder.events == [.subscription, .value(1)])
        let live = Subject()
        upstream.send(live.eraseToAnyPublisher())
        upstream.send(completion: .finished)
        #expect(!recorder.isCompleted, "the live inner keeps it open")
        live.send(2)
        live.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .finished])
    }

    @Test func switchToLatestSwitchingFromInsideTheDownstream() {
        let upstream = HubEngine.PassthroughSubject<AnyPublisher<Int, TestError>, TestError>()
        let first = Subject()
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        recorder.onValue = { value in
            if value == 1 { upstream.send([2, 3].publisher.setFailureType(to: TestError.self).eraseToAnyPublisher()) }
            return .none
        }
        upstream.switchToLatest().subscribe(recorder)
        upstream.send(first.eraseToAnyPublisher())
        first.send(1)
        first.send(99)
        #expect(recorder.values == [1, 2, 3], "the first inner was cancelled by the switch")
        #expect(first.subscriberCount == 0)
    }
}
