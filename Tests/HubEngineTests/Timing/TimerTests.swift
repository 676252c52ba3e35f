import Testing
import HubEngine
import HubTesting

@Suite("Timing: timer publisher")
struct TimingTimerTests {
    @Test func ticksEveryIntervalWithTheSchedulersTime() {
        let scheduler = TestScheduler()
        scheduler.advance(by: .milliseconds(5))
        let values = RecordingSubscriber<SchedulerTime, Never>(initialDemand: .unlimited)
        scheduler.timerPublisher(every: .milliseconds(100)).subscribe(values)
        scheduler.advance(by: .milliseconds(330))
        #expect(values.events == [.subscription, .value(VirtualTime.ms(105)), .value(VirtualTime.ms(205)), .value(VirtualTime.ms(305))])
        #expect(scheduler.pendingActionCount == 1)
    }

    @Test func ticksWithoutDemandAreDropped() {
        let scheduler = TestScheduler()
        let values = RecordingSubscriber<SchedulerTime, Never>(initialDemand: .max(2))
        Publishers.Timer(every: .milliseconds(100), scheduler: scheduler).subscribe(values)
        scheduler.advance(by: .milliseconds(450))
        #expect(values.values == [VirtualTime.ms(100), VirtualTime.ms(200)])
        values.request(.max(1))
        scheduler.advance(by: .milliseconds(200))
        // 300 and 400 were dropped; 500 is delivered, 600 dropped again.
        #expect(values.values == [VirtualTime.ms(100), VirtualTime.ms(200), VirtualTime.ms(500)])
    }

    @Test func demandReturnedFromReceiveCounts() {
        let scheduler = TestScheduler()
        let values = RecordingSubscriber<SchedulerTime, Never>(initialDemand: .max(1), demandPerValue: .max(1))
        scheduler.timerPublisher(every: .milliseconds(10)).subscribe(values)
        scheduler.advance(by: .milliseconds(50))
        #expect(values.values.count == 5)
    }

    @Test func cancelStopsTheRepeatingAction() {
        let scheduler = TestScheduler()
        let values = RecordingSubscriber<SchedulerTime, Never>(initialDemand: .unlimited)
        scheduler.timerPublisher(every: .milliseconds(100)).subscribe(values)
        scheduler.advance(by: .milliseconds(150))
        values.cancel()
        #expect(scheduler.pendingActionCount == 0)
        scheduler.advance(by: .seconds(1))
        #expect(values.values == [VirtualTime.ms(100)])
        values.cancel()
    }

    @Test func cancelFromInsideReceiveStopsTheTimer() {
        let scheduler = TestScheduler()
        let values = RecordingSubscriber<SchedulerTime, Never>(initialDemand: .unlimited)
        values.onValue = { _ in values.cancel(); return .unlimited }
        scheduler.timerPublisher(every: .milliseconds(100)).subscribe(values)
        scheduler.advance(by: .seconds(1))
        #expect(values.values == [VirtualTime.ms(100)])
        #expect(scheduler.isIdle)
    }

    @Test func eachSubscriberHasItsOwnTimer() {
        let scheduler = TestScheduler()
        let timer = scheduler.timerPublisher(every: .milliseconds(100))
        let first = RecordingSubscriber<SchedulerTime, Never>(initialDemand: .unlimited)
        timer.subscribe(first)
        scheduler.advance(by: .milliseconds(50))
        let second = RecordingSubscriber<SchedulerTime, Never>(initialDemand: .unlimited)
        timer.subscribe(second)
        scheduler.advance(by: .milliseconds(100))
        #expect(first.values == [VirtualTime.ms(100)])
        #expect(second.values == [VirtualTime.ms(150)])
        first.cancel()
        second.cancel()
        #expect(scheduler.isIdle)
    }
}
