import Testing
import HubEngine
import HubTesting

@Suite("HigherOrderOperators: retry with back-off")
struct RetryWithBackoffTests {
    typealias Probe = DemandProbe<Int, TestError>

    @Test func resubscribesAfterEachFailureWaitingLongerEachTime() {
        let scheduler = TestScheduler()
        let probe = Probe()
        let recorder = probe.retry(backoff: .milliseconds(100), maximum: .milliseconds(350), scheduler: scheduler).record()
        #expect(probe.subscriptions == 1)
        probe.send(completion: .failure(.oops))
        scheduler.advance(by: .milliseconds(99))
        #expect(probe.subscriptions == 1, "not before the first delay")
        scheduler.advance(by: .milliseconds(1))
        #expect(probe.subscriptions == 2)
        probe.send(completion: .failure(.oops))
        scheduler.advance(by: .milliseconds(199))
        #expect(probe.subscriptions == 2)
        scheduler.advance(by: .milliseconds(1))
        #expect(probe.subscriptions == 3, "twice the delay")
        probe.send(completion: .failure(.oops))
        scheduler.advance(by: .milliseconds(349))
        #expect(probe.subscriptions == 3)
        scheduler.advance(by: .milliseconds(1))
        #expect(probe.subscriptions == 4, "at most the maximum")
        #expect(recorder.events == [.subscription], "failures never reach the downstream")
        // A value resets the delay.
        _ = probe.send(7)
        probe.send(completion: .failure(.oops))
        scheduler.advance(by: .milliseconds(100))
        #expect(probe.subscriptions == 5)
        #expect(recorder.values == [7])
    }

    @Test func anUpstreamThatFailsAtOnceNeverSpins() {
        let scheduler = TestScheduler()
        var attempts = 0
        let failing = Deferred { () -> Fail<Int, TestError> in
            attempts += 1
            return Fail(error: .oops)
        }
        let recorder = failing.retry(backoff: .milliseconds(100), maximum: .seconds(1), scheduler: scheduler).record()
        #expect(attempts == 1)
        #expect(scheduler.pendingActionCount == 1, "one timer for the next attempt, nothing else")
        scheduler.advance(by: .seconds(10))
        // 0.1 + 0.2 + 0.4 + 0.8 + 1 × 8.5: about 13 attempts in 10 s, not millions.
        #expect(attempts >= 10 && attempts <= 14, "\(attempts) attempts")
        recorder.cancel()
        #expect(scheduler.pendingActionCount == 0, "cancelling cancels the pending attempt")
        scheduler.advance(by: .seconds(10))
        #expect(attempts <= 14)
    }

    @Test func outstandingDemandCarriesOverAndFinishingEnds() {
        let scheduler = TestScheduler()
        let probe = Probe()
        let recorder = probe.retry(backoff: .milliseconds(10), maximum: .seconds(1), scheduler: scheduler).record(initialDemand: .max(3))
        _ = probe.send(1)
        probe.send(completion: .failure(.oops))
        scheduler.advance(by: .milliseconds(10))
        #expect(probe.requests == [.max(3), .max(2)], "the two values not delivered yet are asked again")
        _ = probe.send(2)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .finished])
    }

    @Test func aFailureThatIsNotRetryableEndsItAtOnce() {
        let scheduler = TestScheduler()
        let probe = Probe()
        let recorder = probe.retry(
            backoff: .milliseconds(10), maximum: .seconds(1), scheduler: scheduler,
            isRetryable: { $0 == .oops }
        ).record()
        probe.send(completion: .failure(.oops))
        scheduler.advance(by: .milliseconds(10))
        #expect(probe.subscriptions == 2, "a retryable failure is retried")
        _ = probe.send(1)
        probe.send(completion: .failure(.other(1)))
        #expect(recorder.events == [.subscription, .value(1), .failure(.other(1))])
        #expect(scheduler.pendingActionCount == 0, "no attempt is scheduled")
        scheduler.advance(by: .seconds(10))
        #expect(probe.subscriptions == 2)
    }
}
