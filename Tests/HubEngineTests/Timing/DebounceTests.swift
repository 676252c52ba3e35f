import HubEngine
import Testing
import HubTesting

@Suite("Timing: debounce")
struct TimingDebounceTests {
    typealias S = Stamped<Int>

    @Test func emitsTheLastValueAfterAQuietPeriod() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.debounce(for: .milliseconds(300), scheduler: scheduler).subscribe(out)
        scheduler.at(0) { source.send(1) }
        scheduler.at(100) { source.send(2) }
        scheduler.at(200) { source.send(3) }
        scheduler.at(600) { source.send(4) }
        scheduler.at(1000) { source.send(completion: .finished) }
        scheduler.advance(by: .seconds(2))
        #expect(out.timeline == [.at(0, .subscription), .at(500, .value(3)), .at(900, .value(4)), .at(1000, .finished)])
        #expect(source.requests == [.unlimited])
        #expect(scheduler.isIdle)
    }

    @Test func completionDropsThePendingValue() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.debounce(for: .milliseconds(300), scheduler: scheduler).subscribe(out)
        scheduler.at(0) { source.send(1) }
        scheduler.at(100) { source.send(completion: .finished) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(100, .finished)])
        #expect(scheduler.isIdle)
    }

    @Test func failureIsDeliveredThroughTheScheduler() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.debounce(for: .milliseconds(300), scheduler: scheduler).subscribe(out)
        source.send(1)
        source.send(completion: .failure(.oops))
        #expect(out.timeline == [.at(0, .subscription)])
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(0, .failure(.oops))])
        #expect(scheduler.isIdle)
    }

    @Test func valuesThatSettleWithoutDemandAreDropped() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler, initialDemand: .max(1))
        source.debounce(for: .milliseconds(300), scheduler: scheduler).subscribe(out)
        scheduler.at(0) { source.send(1) }
        scheduler.at(400) { source.send(2) }
        scheduler.at(800) { out.request(.max(1)) }
        scheduler.at(900) { source.send(3) }
        scheduler.advance(by: .seconds(2))
        #expect(out.timeline == [.at(0, .subscription), .at(300, .value(1)), .at(1200, .value(3))])
        // Debounce asks upstream for everything whatever the downstream demand.
        #expect(source.requests == [.unlimited])
    }

    @Test func cancelReleasesTheTimerAndTheUpstream() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.debounce(for: .milliseconds(300), scheduler: scheduler).subscribe(out)
        scheduler.at(0) { source.send(1) }
        scheduler.at(100) { out.cancel() }
        scheduler.advance(by: .milliseconds(150))
        #expect(scheduler.isIdle)
        #expect(source.cancellations == 1)
        source.send(2)
        source.send(completion: .finished)
        scheduler.advance(by: .seconds(1))
        out.cancel()
        #expect(out.timeline == [.at(0, .subscription)])
        #expect(source.cancellations == 1)
    }

    @Test func cancelWhileTheCompletionIsInFlightSuppressesIt() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.debounce(for: .milliseconds(300), scheduler: scheduler).subscribe(out)
        source.send(completion: .finished)
        out.cancel()
        #expect(scheduler.isIdle)
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription)])
    }
}
