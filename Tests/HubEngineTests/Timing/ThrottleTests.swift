import HubEngine
import Testing
import HubTesting

@Suite("Timing: throttle")
struct TimingThrottleTests {
    private func run(latest: Bool) -> [Stamped<Int>] {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.throttle(for: .milliseconds(100), scheduler: scheduler, latest: latest).subscribe(out)
        for (ms, value) in [(0, 1), (30, 2), (60, 3), (150, 4), (400, 5)] as [(Int64, Int)] {
            scheduler.at(ms) { source.send(value) }
        }
        scheduler.advance(by: .seconds(1))
        #expect(scheduler.isIdle)
        #expect(source.requests == [.unlimited])
        return out.timeline
    }

    // Timelines derived from OpenCombine's Throttle: the first value after a quiet period goes
    // out at once; the next one waits for the last emission + interval; in between, the latest
    // (or the first) value is kept.
    @Test func latestKeepsTheNewestValueOfEachWindow() {
        #expect(run(latest: true) == [.at(0, .subscription), .at(0, .value(1)), .at(100, .value(3)), .at(200, .value(4)), .at(400, .value(5))])
    }

    @Test func firstKeepsTheOldestValueOfEachWindow() {
        #expect(run(latest: false) == [.at(0, .subscription), .at(0, .value(1)), .at(100, .value(2)), .at(200, .value(4)), .at(400, .value(5))])
    }

    @Test func completionFollowsAScheduledValue() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.throttle(for: .milliseconds(100), scheduler: scheduler, latest: true).subscribe(out)
        scheduler.at(0) { source.send(1) }
        scheduler.at(30) { source.send(2) }
        scheduler.at(50) { source.send(completion: .failure(.oops)) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(0, .value(1)), .at(100, .value(2)), .at(100, .failure(.oops))])
        #expect(scheduler.isIdle)
    }

    @Test func completionWithNothingScheduledGoesThroughTheScheduler() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.throttle(for: .milliseconds(100), scheduler: scheduler, latest: false).subscribe(out)
        source.send(completion: .finished)
        #expect(out.timeline == [.at(0, .subscription)])
        scheduler.advance()
        #expect(out.timeline == [.at(0, .subscription), .at(0, .finished)])
    }

    @Test func valuesWithoutDemandAreDropped() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler, initialDemand: .max(1))
        source.throttle(for: .milliseconds(100), scheduler: scheduler, latest: true).subscribe(out)
        scheduler.at(0) { source.send(1) }
        scheduler.at(30) { source.send(2) }
        scheduler.at(200) { out.request(.max(1)) }
        scheduler.at(250) { source.send(3) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(0, .value(1)), .at(250, .value(3))])
        #expect(source.requests == [.unlimited])
    }

    @Test func cancelReleasesTheScheduledEmissionAndTheUpstream() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.throttle(for: .milliseconds(100), scheduler: scheduler, latest: true).subscribe(out)
        scheduler.at(0) { source.send(1) }
        scheduler.at(30) { source.send(2) }
        scheduler.at(50) { out.cancel() }
        scheduler.advance(by: .milliseconds(60))
        #expect(scheduler.isIdle)
        #expect(source.cancellations == 1)
        source.send(3)
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(0, .value(1))])
    }
}
