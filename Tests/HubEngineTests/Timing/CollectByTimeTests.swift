import HubEngine
import Testing
import HubTesting

// OpenCombine 0.14 has no CollectByTime: these timelines follow Apple's documentation
// (periodic groups; `.max(count × n)` upstream for `.byTimeOrCount`; a failure is forwarded
// instead of the collected values; `.finished` sends what is left first).
@Suite("Timing: collect by time")
struct TimingCollectByTimeTests {
    @Test func byTimeEmitsWhatWasCollectedEachInterval() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<[Int]>(scheduler: scheduler)
        source.collect(.byTime(scheduler, .milliseconds(100))).subscribe(out)
        scheduler.at(10) { source.send(1) }
        scheduler.at(50) { source.send(2) }
        scheduler.at(150) { source.send(3) }
        scheduler.at(350) { source.send(4) }
        scheduler.at(370) { source.send(completion: .finished) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(100, .value([1, 2])), .at(200, .value([3])), .at(370, .value([4])), .at(370, .finished)])
        #expect(source.requests == [.unlimited])
        #expect(scheduler.isIdle)
    }

    @Test func byTimeKeepsCollectingWhileThereIsNoDemand() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<[Int]>(scheduler: scheduler, initialDemand: .max(1))
        source.collect(.byTime(scheduler, .milliseconds(100))).subscribe(out)
        scheduler.at(10) { source.send(1) }
        scheduler.at(150) { source.send(2) }
        scheduler.at(250) { source.send(3); out.request(.max(1)) }
        scheduler.advance(by: .milliseconds(350))
        #expect(out.timeline == [.at(0, .subscription), .at(100, .value([1])), .at(300, .value([2, 3]))])
        #expect(source.requests == [.unlimited])
    }

    @Test func byTimeOrCountEmitsFullGroupsAtOnceAndRestartsTheInterval() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<[Int]>(scheduler: scheduler, initialDemand: .max(3))
        source.collect(.byTimeOrCount(scheduler, .milliseconds(100), 2)).subscribe(out)
        #expect(source.requests == [.max(6)])
        scheduler.at(10) { source.send(1) }
        scheduler.at(20) { source.send(2) }
        scheduler.at(50) { source.send(3) }
        scheduler.at(130) { source.send(4) }
        scheduler.at(140) { source.send(5) }
        scheduler.at(150) { source.send(6) }
        scheduler.at(300) { out.cancel() }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(20, .value([1, 2])), .at(120, .value([3])), .at(140, .value([4, 5]))])
        #expect(source.cancellations == 1)
        #expect(scheduler.isIdle)
    }

    @Test func byTimeOrCountRequestsCountTimesTheDemandReturned() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<[Int]>(scheduler: scheduler, initialDemand: .max(1), demandPerValue: .max(2))
        source.collect(.byTimeOrCount(scheduler, .milliseconds(100), 3)).subscribe(out)
        source.send(1)
        source.send(2)
        source.send(3)
        #expect(out.timeline == [.at(0, .subscription), .at(0, .value([1, 2, 3]))])
        #expect(source.requests == [.max(3), .max(6)])
    }

    @Test func failureDropsTheCollectedValues() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<[Int]>(scheduler: scheduler)
        source.collect(.byTime(scheduler, .milliseconds(100))).subscribe(out)
        scheduler.at(10) { source.send(1) }
        scheduler.at(50) { source.send(completion: .failure(.oops)) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(50, .failure(.oops))])
        #expect(scheduler.isIdle)
    }

    @Test func finishedWaitsForDemandToSendTheLastGroup() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<[Int]>(scheduler: scheduler, initialDemand: .none)
        source.collect(.byTime(scheduler, .milliseconds(100))).subscribe(out)
        scheduler.at(10) { source.send(1) }
        scheduler.at(20) { source.send(completion: .finished) }
        scheduler.at(30) { out.request(.max(1)) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(30, .value([1])), .at(30, .finished)])
        #expect(scheduler.isIdle)
    }

    @Test func finishedWithNothingCollectedFinishesAtOnce() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<[Int]>(scheduler: scheduler, initialDemand: .none)
        source.collect(.byTimeOrCount(scheduler, .milliseconds(100), 2)).subscribe(out)
        source.send(completion: .finished)
        #expect(out.timeline == [.at(0, .subscription), .at(0, .finished)])
        #expect(scheduler.isIdle)
        #expect(source.requests == [])
    }

    @Test func cancelStopsTheTimer() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<[Int]>(scheduler: scheduler)
        source.collect(.byTime(scheduler, .milliseconds(100))).subscribe(out)
        source.send(1)
        out.cancel()
        out.cancel()
        #expect(scheduler.isIdle)
        #expect(source.cancellations == 1)
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription)])
    }
}
