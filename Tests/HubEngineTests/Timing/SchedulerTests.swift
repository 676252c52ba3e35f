import Testing
import HubEngine
import HubTesting

@Suite("Timing: schedulers")
struct TimingSchedulerTests {
    @Test func testSchedulerRunsDueActionsInTimeOrderAndFIFOForEqualTimes() {
        let scheduler = TestScheduler()
        var log: [String] = []
        scheduler.schedule(after: VirtualTime.ms(200)) { log.append("c@\(VirtualTime.inMilliseconds(scheduler.now))") }
        scheduler.schedule(after: VirtualTime.ms(100)) { log.append("a@\(VirtualTime.inMilliseconds(scheduler.now))") }
        scheduler.schedule(after: VirtualTime.ms(100)) { log.append("b@\(VirtualTime.inMilliseconds(scheduler.now))") }
        scheduler.schedule(after: VirtualTime.ms(300)) { log.append("d") }
        #expect(scheduler.now == .zero)
        scheduler.advance(by: .milliseconds(250))
        #expect(log == ["a@100", "b@100", "c@200"])
        #expect(scheduler.now == VirtualTime.ms(250))
        #expect(scheduler.pendingActionCount == 1)
    }

    @Test func scheduleWithoutDateWaitsForTheNextAdvance() {
        let scheduler = TestScheduler()
        var ran = 0
        scheduler.schedule { ran += 1 }
        #expect(ran == 0)
        scheduler.advance()
        #expect(ran == 1)
        #expect(scheduler.now == .zero)
    }

    @Test func actionsScheduledByActionsRunIfDue() {
        let scheduler = TestScheduler()
        var log: [Int64] = []
        scheduler.at(100) {
            log.append(VirtualTime.inMilliseconds(scheduler.now))
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(50))) {
                log.append(VirtualTime.inMilliseconds(scheduler.now))
            }
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(500))) { log.append(-1) }
        }
        scheduler.advance(to: VirtualTime.ms(200))
        #expect(log == [100, 150])
        #expect(scheduler.pendingActionCount == 1)
    }

    @Test func pastDatesRunAtTheCurrentTime() {
        let scheduler = TestScheduler()
        scheduler.advance(by: .seconds(1))
        var at: SchedulerTime?
        scheduler.schedule(after: .zero) { at = scheduler.now }
        scheduler.advance(to: .zero) // a past target only runs what is due now
        #expect(at == VirtualTime.ms(1000))
        #expect(scheduler.now == VirtualTime.ms(1000))
    }

    @Test func cancelledActionsNeverRun() {
        let scheduler = TestScheduler()
        var ran = false
        let token = scheduler.schedule(after: VirtualTime.ms(10)) { ran = true }
        #expect(scheduler.pendingActionCount == 1)
        token.cancel()
        token.cancel()
        #expect(scheduler.pendingActionCount == 0)
        scheduler.advance(by: .seconds(1))
        #expect(!ran)
    }

    @Test func repeatingActionsRepeatUntilCancelled() {
        let scheduler = TestScheduler()
        var ticks: [Int64] = []
        let token = scheduler.schedule(after: VirtualTime.ms(100), interval: .milliseconds(100)) {
            ticks.append(VirtualTime.inMilliseconds(scheduler.now))
        }
        scheduler.advance(by: .milliseconds(350))
        #expect(ticks == [100, 200, 300])
        token.cancel()
        scheduler.advance(by: .seconds(1))
        #expect(ticks == [100, 200, 300])
        #expect(scheduler.isIdle)
    }

    @Test func aRepeatingActionCanCancelItself() {
        let scheduler = TestScheduler()
        var count = 0
        var token: (any Cancellable)?
        token = scheduler.schedule(after: VirtualTime.ms(10), interval: .milliseconds(10)) {
            count += 1
            if count == 3 { token?.cancel() }
        }
        scheduler.advance(by: .seconds(1))
        #expect(count == 3)
        #expect(scheduler.isIdle)
    }

    @Test func runEmptiesTheQueueAndStopsWhenOnlyRepeatingActionsRemain() {
        let scheduler = TestScheduler()
        var log: [String] = []
        scheduler.schedule(after: VirtualTime.ms(100), interval: .milliseconds(100)) { log.append("tick@\(VirtualTime.inMilliseconds(scheduler.now))") }
        scheduler.at(250) { log.append("once@250") }
        let steps = scheduler.run()
        #expect(log == ["tick@100", "tick@200", "once@250"])
        #expect(steps == 3)
        #expect(scheduler.now == VirtualTime.ms(250))
        #expect(scheduler.pendingActionCount == 1)
    }

    @Test func runHonoursMaxSteps() {
        let scheduler = TestScheduler()
        var count = 0
        func again() {
            count += 1
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(1))) { again() }
        }
        scheduler.schedule { again() }
        #expect(scheduler.run(maxSteps: 10) == 10)
        #expect(count == 10)
    }

    @Test func immediateSchedulerRunsAtOnceAndItsClockNeverGoesBack() {
        let scheduler = ImmediateScheduler.shared
        var log: [Int] = []
        scheduler.schedule { log.append(1) }
        scheduler.schedule(after: scheduler.now.advanced(by: .seconds(60))) { log.append(2) }
        scheduler.schedule(after: scheduler.now, interval: .seconds(1)) { log.append(3) }
        #expect(log == [1, 2, 3])
        let first = scheduler.now
        let second = scheduler.now
        #expect(first <= second)
        #expect(scheduler.minimumTolerance == .zero)
    }
}
