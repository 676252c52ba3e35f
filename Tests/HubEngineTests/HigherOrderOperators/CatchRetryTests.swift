import Testing
import HubEngine
import HubTesting

@Suite("Higher-order operators: catch, tryCatch, retry")
struct CatchRetryTests {
    typealias Probe = DemandProbe<Int, TestError>

    // MARK: catch

    @Test func catchSwitchesToTheHandlersPublisherOnFailure() {
        let upstream = HubEngine.PassthroughSubject<Int, TestError>()
        let replacement = HubEngine.PassthroughSubject<Int, Never>()
        var caught: [TestError] = []
        let recorder = upstream.catch { error -> HubEngine.PassthroughSubject<Int, Never> in
            caught.append(error)
            return replacement
        }.record()
        upstream.send(1)
        upstream.send(completion: .failure(.other(4)))
        upstream.send(2)
        replacement.send(3)
        replacement.send(completion: .finished)
        #expect(caught == [.other(4)])
        #expect(recorder.events == [.subscription, .value(1), .value(3), .finished])
    }

    @Test func catchPassesDemandThroughAndCarriesOutstandingDemandToTheReplacement() {
        let upstream = Probe()
        let replacement = Probe()
        let recorder = upstream.catch { _ in replacement }.record(initialDemand: .max(3))
        #expect(upstream.requests == [.max(3)])
        recorder.request(.max(1))
        #expect(upstream.requests == [.max(3), .max(1)])
        upstream.send(1)
        upstream.send(completion: .failure(.oops))
        #expect(replacement.requests == [.max(3)])
        recorder.request(.max(2))
        #expect(replacement.requests == [.max(3), .max(2)])
        #expect(upstream.requests == [.max(3), .max(1)])
        #expect(recorder.events == [.subscription, .value(1)])
    }

    @Test func catchDoesNotCallTheHandlerWhenTheUpstreamFinishes() {
        let upstream = HubEngine.PassthroughSubject<Int, TestError>()
        var calls = 0
        let recorder = upstream.catch { _ -> Empty<Int, TestError> in
            calls += 1
            return Empty()
        }.record()
        upstream.send(completion: .finished)
        #expect(calls == 0)
        #expect(recorder.events == [.subscription, .finished])
    }

    @Test func catchCancelCancelsTheActiveSide() {
        let upstream = Probe()
        let replacement = Probe()
        let before = upstream.catch { _ in replacement }.record()
        before.cancel()
        before.cancel()
        #expect(upstream.cancellations == 1)
        upstream.send(1)
        upstream.send(completion: .failure(.oops))
        #expect(replacement.subscriptions == 0)
        #expect(before.events == [.subscription])

        let second = Probe()
        let secondReplacement = Probe()
        let after = second.catch { _ in secondReplacement }.record()
        second.send(completion: .failure(.oops))
        after.cancel()
        #expect(second.cancellations == 0)
        #expect(secondReplacement.cancellations == 1)
        secondReplacement.send(9)
        #expect(after.events == [.subscription])
    }

    @Test func catchDeliversTheReplacementsFailure() {
        let upstream = HubEngine.PassthroughSubject<Int, TestError>()
        let recorder = upstream.catch { _ in Fail<Int, TestError>(error: .other(2)) }.record()
        upstream.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .failure(.other(2))])
    }

    @Test func catchWithAColdReplacementWaitsForDemand() {
        let upstream = HubEngine.PassthroughSubject<Int, TestError>()
        let recorder = upstream.catch { _ in [7, 8].publisher }.record(initialDemand: .max(1))
        upstream.send(1)
        upstream.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .value(1)])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(1), .value(7)])
        recorder.request(.max(3))
        #expect(recorder.events == [.subscription, .value(1), .value(7), .value(8), .finished])
    }

    // MARK: tryCatch

    @Test func tryCatchDeliversTheErrorTheHandlerThrows() {
        let upstream = HubEngine.PassthroughSubject<Int, TestError>()
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        HubCastingPublisher(upstream: upstream.tryCatch { error -> Just<Int> in
            throw TestError.other(error == .oops ? 1 : 2)
        }).subscribe(recorder)
        upstream.send(5)
        upstream.send(completion: .failure(.oops))
        upstream.send(6)
        #expect(recorder.events == [.subscription, .value(5), .failure(.other(1))])
    }

    @Test func tryCatchSwitchesLikeCatchWhenTheHandlerReturns() {
        let upstream = Probe()
        let replacement = HubEngine.PassthroughSubject<Int, TestError>()
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(2))
        HubCastingPublisher(upstream: upstream.tryCatch { _ in replacement }).subscribe(recorder)
        #expect(upstream.requests == [.max(2)])
        upstream.send(completion: .failure(.oops))
        replacement.send(1)
        replacement.send(2)
        replacement.send(3)
        replacement.send(completion: .failure(.other(8)))
        #expect(recorder.events == [.subscription, .value(1), .value(2), .failure(.other(8))])
    }

    @Test func tryCatchFailureTypeIsAnyError() {
        let publisher: HubEngine.Publishers.TryCatch<HubEngine.PassthroughSubject<Int, TestError>, Just<Int>>
            = HubEngine.PassthroughSubject<Int, TestError>().tryCatch { _ in Just(0) }
        #expect(type(of: publisher).Failure.self == (any Error).self)
    }

    // MARK: retry

    @Test func retryResubscribesOnFailureAndGivesUpAfterTheRetries() {
        let source = HubFreshSubjects()
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        source.retry(2).subscribe(recorder)
        source.newest?.send(1)
        source.newest?.send(completion: .failure(.oops))
        source.newest?.send(2)
        source.newest?.send(completion: .failure(.oops))
        source.newest?.send(3)
        source.newest?.send(completion: .failure(.other(3)))
        source.newest?.send(4)
        #expect(source.subjects.count == 3)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .value(3), .failure(.other(3))])
        #expect(recorder.subscriptionCount == 1)
    }

    @Test func retryCarriesOutstandingDemandToTheNewSubscription() {
        let upstream = Probe()
        let recorder = upstream.retry(1).record(initialDemand: .max(3))
        #expect(upstream.requests == [.max(3)])
        upstream.send(1)
        upstream.send(completion: .failure(.oops))
        #expect(upstream.subscriptions == 2)
        #expect(upstream.requests == [.max(3), .max(2)])
        recorder.request(.max(1))
        #expect(upstream.requests == [.max(3), .max(2), .max(1)])
        upstream.send(completion: .failure(.other(1)))
        #expect(upstream.subscriptions == 2)
        #expect(recorder.events == [.subscription, .value(1), .failure(.other(1))])
    }

    @Test func retryWithoutLimitKeepsResubscribing() {
        let source = HubFreshSubjects()
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(10))
        HubEngine.Publishers.Retry(upstream: source, retries: nil).subscribe(recorder)
        for value in 0..<20 {
            source.newest?.send(value)
            source.newest?.send(completion: .failure(.oops))
        }
        #expect(source.subjects.count == 21)
        #expect(recorder.values == Array(0..<10))
        #expect(!recorder.isCompleted)
    }

    @Test func retryOfZeroFailsAtOnceAndFinishIsPassedOn() {
        let failing = HubEngine.PassthroughSubject<Int, TestError>()
        let failed = failing.retry(0).record()
        failing.send(completion: .failure(.oops))
        #expect(failed.events == [.subscription, .failure(.oops)])

        let finishing = HubEngine.PassthroughSubject<Int, TestError>()
        let finished = finishing.retry(3).record()
        finishing.send(1)
        finishing.send(completion: .finished)
        #expect(finished.events == [.subscription, .value(1), .finished])
    }

    @Test func retryCancelCancelsTheCurrentSubscriptionOnce() {
        let upstream = Probe()
        let recorder = upstream.retry(5).record()
        upstream.send(completion: .failure(.oops))
        recorder.cancel()
        recorder.cancel()
        #expect(upstream.cancellations == 1)
        upstream.send(1)
        upstream.send(completion: .failure(.oops))
        #expect(upstream.subscriptions == 2)
        #expect(recorder.events == [.subscription])
    }
}
