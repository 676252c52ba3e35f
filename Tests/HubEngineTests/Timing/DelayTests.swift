import HubEngine
import Testing
import HubTesting

@Suite("Timing: delay")
struct TimingDelayTests {
    @Test func delaysValuesAndFinished() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.delay(for: .milliseconds(100), scheduler: scheduler).subscribe(out)
        scheduler.at(0) { source.send(1) }
        scheduler.at(50) { source.send(2) }
        scheduler.at(60) { source.send(completion: .finished) }
        scheduler.advance(by: .milliseconds(99))
        #expect(out.timeline == [.at(0, .subscription)])
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(100, .value(1)), .at(150, .value(2)), .at(160, .finished)])
        #expect(scheduler.isIdle)
    }

    @Test func delaysFailureToo() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.delay(for: .milliseconds(100), scheduler: scheduler).subscribe(out)
        scheduler.at(10) { source.send(1) }
        scheduler.at(20) { source.send(completion: .failure(.oops)) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(110, .value(1)), .at(120, .failure(.oops))])
    }

    @Test func demandPassesThroughAtDeliveryTime() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler, initialDemand: .max(2), demandPerValue: .max(1))
        source.delay(for: .milliseconds(100), scheduler: scheduler).subscribe(out)
        #expect(source.requests == [.max(2)])
        scheduler.at(0) { source.send(1) }
        scheduler.advance(by: .milliseconds(50))
        #expect(source.requests == [.max(2)])
        scheduler.advance(by: .milliseconds(50))
        #expect(source.requests == [.max(2), .max(1)])
        out.request(.max(3))
        #expect(source.requests == [.max(2), .max(1), .max(3)])
    }

    @Test func cancelReleasesEveryScheduledDelivery() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.delay(for: .milliseconds(100), scheduler: scheduler).subscribe(out)
        scheduler.at(0) { source.send(1) }
        scheduler.at(50) { source.send(2) }
        scheduler.at(60) { source.send(3) }
        scheduler.at(120) { out.cancel() }
        scheduler.advance(by: .milliseconds(130))
        #expect(scheduler.isIdle)
        #expect(source.cancellations == 1)
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(100, .value(1))])
    }

    @Test func cancelAfterUpstreamCompletionSuppressesThePendingEvents() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.delay(for: .milliseconds(100), scheduler: scheduler).subscribe(out)
        source.send(1)
        source.send(completion: .finished)
        out.cancel()
        #expect(scheduler.isIdle)
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription)])
        // The upstream had already completed: it is not cancelled.
        #expect(source.cancellations == 0)
    }
}
