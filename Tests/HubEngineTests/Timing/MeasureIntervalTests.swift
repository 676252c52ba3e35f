import HubEngine
import Testing
import HubTesting

@Suite("Timing: measureInterval")
struct TimingMeasureIntervalTests {
    @Test func measuresFromSubscriptionThenBetweenValues() {
        let scheduler = TestScheduler()
        scheduler.advance(by: .milliseconds(10))
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Duration>(scheduler: scheduler)
        source.measureInterval(using: scheduler).subscribe(out)
        scheduler.at(50) { source.send(1) }
        scheduler.at(80) { source.send(2) }
        scheduler.at(200) { source.send(3) }
        scheduler.at(210) { source.send(completion: .failure(.oops)) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [
            .at(10, .subscription), .at(50, .value(.milliseconds(40))), .at(80, .value(.milliseconds(30))),
            .at(200, .value(.milliseconds(120))), .at(210, .failure(.oops)),
        ])
    }

    @Test func demandPassesThrough() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Duration>(scheduler: scheduler, initialDemand: .max(1), demandPerValue: .max(2))
        source.measureInterval(using: scheduler).subscribe(out)
        #expect(source.requests == [.max(1)])
        #expect(source.send(1) == .none)
        #expect(source.requests == [.max(1), .max(2)])
    }

    @Test func cancelCancelsUpstreamAndStopsDelivery() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Duration>(scheduler: scheduler)
        source.measureInterval(using: scheduler).subscribe(out)
        out.cancel()
        out.cancel()
        #expect(source.cancellations == 1)
        source.send(1)
        source.send(completion: .finished)
        #expect(out.timeline == [.at(0, .subscription)])
    }
}
