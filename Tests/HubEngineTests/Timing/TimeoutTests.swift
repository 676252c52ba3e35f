import Testing
import HubEngine
import HubTesting

@Suite("Timing: timeout")
struct TimingTimeoutTests {
    @Test func failsWithTheCustomErrorAfterSilence() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.timeout(.milliseconds(100), scheduler: scheduler, customError: { .other(408) }).subscribe(out)
        scheduler.at(50) { source.send(1) }
        scheduler.at(120) { source.send(2) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(50, .value(1)), .at(120, .value(2)), .at(220, .failure(.other(408)))])
        #expect(source.cancellations == 1)
        #expect(scheduler.isIdle)
    }

    @Test func finishesWithoutACustomError() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.timeout(.milliseconds(100), scheduler: scheduler).subscribe(out)
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(100, .finished)])
        #expect(source.cancellations == 1)
        #expect(scheduler.isIdle)
    }

    @Test func theClockRestartsOnTheFirstRequest() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler, initialDemand: .none)
        source.timeout(.milliseconds(100), scheduler: scheduler).subscribe(out)
        scheduler.at(60) { out.request(.max(1)) }
        scheduler.at(100) { out.request(.max(1)) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(160, .finished)])
        #expect(source.requests == [.max(1), .max(1)])
    }

    @Test func valuesAndCompletionHopThroughTheScheduler() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler, initialDemand: .max(1), demandPerValue: .max(2))
        source.timeout(.milliseconds(100), scheduler: scheduler).subscribe(out)
        source.send(1)
        source.send(completion: .failure(.oops))
        #expect(out.timeline == [.at(0, .subscription)])
        #expect(source.requests == [.max(1)])
        scheduler.advance()
        #expect(out.timeline == [.at(0, .subscription), .at(0, .value(1)), .at(0, .failure(.oops))])
        #expect(source.requests == [.max(1), .max(2)])
        #expect(scheduler.isIdle)
        #expect(source.cancellations == 0)
    }

    @Test func cancelReleasesTheTimerAndPendingHops() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.timeout(.milliseconds(100), scheduler: scheduler).subscribe(out)
        source.send(1)
        out.cancel()
        out.cancel()
        #expect(scheduler.isIdle)
        #expect(source.cancellations == 1)
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription)])
    }

    @Test func valuesAfterATimeoutAreIgnored() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.timeout(.milliseconds(100), scheduler: scheduler).subscribe(out)
        // The value arrives at the very time the timer fires, after it in FIFO order: too late.
        scheduler.advance(by: .milliseconds(100))
        source.send(1)
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(100, .finished)])
        #expect(scheduler.isIdle)
    }
}

@Suite("Timing: timeout on an immediate scheduler")
struct TimingTimeoutImmediateTests {
    @Test func theSubscriptionComesBeforeTheImmediateTimeout() {
        let source = DemandProbe<Int, TestError>()
        let out = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
        source.timeout(.milliseconds(100), scheduler: ImmediateScheduler.shared, customError: { .other(1) }).subscribe(out)
        #expect(out.events == [.subscription, .failure(.other(1))])
        #expect(source.cancellations == 1)
        #expect(source.requests == [])
    }
}
