import Testing
import HubEngine
import HubTesting

/// `Future`, `Deferred` and `Record`.
@Suite("SequenceOperators: Future, Deferred, Record")
struct SeqOpsPublishersTests {
    // MARK: Future

    @Test func futureRunsItsClosureOnceAtCreation() {
        var runs = 0
        let future = Future<Int, TestError> { promise in
            runs += 1
            promise(.success(3))
        }
        #expect(runs == 1)
        let first = future.record()
        let second = future.record()
        #expect(runs == 1)
        #expect(first.events == [.subscription, .value(3), .finished])
        #expect(second.events == [.subscription, .value(3), .finished])
    }

    @Test func futureDeliversTheValueToEachSubscriberOnceItHasDemand() {
        var fulfil: Future<Int, TestError>.Promise?
        let future = Future<Int, TestError> { fulfil = $0 }
        let eager = future.record(initialDemand: .max(1))
        let lazy = future.record(initialDemand: .none)
        #expect(future.isSettled == false)
        fulfil?(.success(8))
        fulfil?(.success(9))
        #expect(future.isSettled)
        #expect(eager.events == [.subscription, .value(8), .finished])
        #expect(lazy.events == [.subscription])
        lazy.request(.max(1))
        lazy.request(.max(1))
        #expect(lazy.events == [.subscription, .value(8), .finished])
        let late = future.record(initialDemand: .none)
        #expect(late.events == [.subscription])
        late.request(.unlimited)
        #expect(late.events == [.subscription, .value(8), .finished])
    }

    @Test func futureFailureNeedsNoDemand() {
        var fulfil: Future<Int, TestError>.Promise?
        let future = Future<Int, TestError> { fulfil = $0 }
        let waiting = future.record(initialDemand: .none)
        fulfil?(.failure(.oops))
        fulfil?(.success(1))
        #expect(waiting.events == [.subscription, .failure(.oops)])
        let late = future.record(initialDemand: .none)
        #expect(late.events == [.subscription, .failure(.oops)])
    }

    @Test func futureCancelledSubscriberReceivesNothing() {
        var fulfil: Future<Int, TestError>.Promise?
        let future = Future<Int, TestError> { fulfil = $0 }
        let cancelled = future.record(initialDemand: .max(1))
        let kept = future.record(initialDemand: .max(1))
        cancelled.cancel()
        cancelled.cancel()
        fulfil?(.success(2))
        cancelled.request(.max(1))
        #expect(cancelled.events == [.subscription])
        #expect(kept.events == [.subscription, .value(2), .finished])
    }

    @Test func futureSubscriberMayCancelAnotherFromInsideReceive() {
        var fulfil: Future<Int, TestError>.Promise?
        let future = Future<Int, TestError> { fulfil = $0 }
        let second = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
        let first = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
        first.onValue = { _ in second.cancel(); return .none }
        future.subscribe(first)
        future.subscribe(second)
        fulfil?(.success(4))
        #expect(first.events == [.subscription, .value(4), .finished])
        #expect(second.events == [.subscription])
    }

    // MARK: Deferred

    @Test func deferredCreatesAPublisherPerSubscriber() {
        var created = 0
        let deferred = Deferred { () -> Publishers.Sequence<[Int], Never> in
            created += 1
            return [created, created * 10].publisher
        }
        #expect(created == 0)
        let first = deferred.record()
        let second = deferred.record(initialDemand: .max(1))
        #expect(created == 2)
        #expect(first.events == [.subscription, .value(1), .value(10), .finished])
        #expect(second.events == [.subscription, .value(2)])
    }

    @Test func deferredPassesDemandAndCancelToTheCreatedPublisher() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = Deferred { probe }.record(initialDemand: .max(2))
        #expect(probe.requests == [.max(2)])
        recorder.cancel()
        #expect(probe.cancellations == 1)
    }

    // MARK: Record

    @Test func recordBuiltValueByValue() {
        let record = Record<Int, TestError> { recording in
            recording.receive(1)
            recording.receive(2)
            recording.receive(completion: .failure(.oops))
        }
        #expect(record.recording.output == [1, 2])
        #expect(record.recording.completion == .failure(.oops))
        let recorder = record.record(initialDemand: .max(1))
        #expect(recorder.events == [.subscription, .value(1)])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(1), .value(2), .failure(.oops)])
        // Replayed to every subscriber.
        #expect(record.record().events == [.subscription, .value(1), .value(2), .failure(.oops)])
    }

    @Test func recordDefaultsToFinished() {
        var recording = Record<Int, TestError>.Recording()
        recording.receive(5)
        #expect(recording.completion == .finished)
        #expect(Record(recording: recording).record().events == [.subscription, .value(5), .finished])
    }

    @Test func emptyRecordCompletesOnSubscription() {
        let recorder = Record<Int, TestError>(output: [], completion: .failure(.other(1))).record(initialDemand: .none)
        #expect(recorder.events == [.subscription, .failure(.other(1))])
    }

    @Test func recordCancelStopsDelivery() {
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
        recorder.onValue = { _ in recorder.cancel(); return .max(5) }
        Record<Int, TestError>(output: [1, 2, 3], completion: .finished).subscribe(recorder)
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(1)])
    }

    @Test func recordCancelInsideTheLastValueSuppressesTheCompletion() {
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
        recorder.onValue = { _ in recorder.cancel(); return .none }
        Record<Int, TestError>(output: [1], completion: .finished).subscribe(recorder)
        #expect(recorder.events == [.subscription, .value(1)])
    }
}
