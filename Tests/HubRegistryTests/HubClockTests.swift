import Testing
#if canImport(Glibc)
import Glibc
#endif
import HubRegistry
import HubEngine
import HubValue
import HubWire
import HubTesting

@Suite("Hub: the clock of now()")
struct HubClockTests {
    @Test func nowIsCalendarTimeInMilliseconds() throws {
        let hub = Hub(scheduler: TestScheduler())
        let before = Int64(time(nil)) * 1000
        let recorder = RecordingSubscriber<Value, HubError>(initialDemand: .unlimited)
        try hub.compile(pipeline: "just(now())").subscribe(recorder)
        let after = Int64(time(nil)) * 1000 + 1000
        guard case .int(let now)? = recorder.values.first else {
            Issue.record("expected an integer, got \(recorder.events)")
            return
        }
        #expect(now >= before && now <= after)
    }

    @Test func aGivenClockIsUsed() throws {
        let hub = Hub(scheduler: TestScheduler(), wallClock: { SchedulerTime(nanoseconds: 1_700_000_000_123_000_000) })
        let recorder = RecordingSubscriber<Value, HubError>(initialDemand: .unlimited)
        try hub.compile(pipeline: "sequence([1]) | map(now())").subscribe(recorder)
        #expect(recorder.values == [1_700_000_000_123])
    }
}
