import HubEngine
import Testing
import HubTesting

@Suite("Timing: receive(on:) and subscribe(on:)")
struct TimingReceiveOnSubscribeOnTests {
    @Test func receiveOnDeliversEventsThroughTheScheduler() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler, initialDemand: .max(1), demandPerValue: .max(1))
        source.receive(on: scheduler).subscribe(out)
        // The subscription and the request go through at once.
        #expect(out.timeline == [.at(0, .subscription)])
        #expect(source.requests == [.max(1)])
        scheduler.at(10) { source.send(1); source.send(completion: .finished) }
        scheduler.advance(by: .milliseconds(10))
        #expect(out.timeline == [.at(0, .subscription), .at(10, .value(1)), .at(10, .finished)])
        // The demand a delivery returns goes upstream at delivery.
        #expect(source.requests == [.max(1), .max(1)])
    }

    @Test func receiveOnDeliversNothingAfterCancel() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.receive(on: scheduler).subscribe(out)
        source.send(1)
        out.cancel()
        #expect(source.cancellations == 1)
        scheduler.advance()
        source.send(2)
        scheduler.advance()
        #expect(out.timeline == [.at(0, .subscription)])
    }

    @Test func receiveOnCancelWhileCompletionIsInFlightSuppressesIt() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.receive(on: scheduler).subscribe(out)
        source.send(completion: .failure(.oops))
        out.cancel()
        scheduler.advance()
        #expect(out.timeline == [.at(0, .subscription)])
    }

    @Test func subscribeOnSubscribesRequestsAndCancelsThroughTheScheduler() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler, initialDemand: .none)
        source.subscribe(on: scheduler).subscribe(out)
        #expect(source.subscriptions == 0)
        #expect(out.timeline == [])
        scheduler.advance(by: .milliseconds(5))
        #expect(source.subscriptions == 1)
        // The hop was queued at time 0, so it ran at time 0.
        #expect(out.timeline == [.at(0, .subscription)])
        out.request(.max(2))
        #expect(source.requests == [])
        scheduler.advance()
        #expect(source.requests == [.max(2)])
        // Values come back directly, with their demand returned upstream as is.
        out.demandPerValue = .max(1)
        #expect(source.send(1) == .max(1))
        #expect(out.timeline == [.at(0, .subscription), .at(5, .value(1))])
        out.cancel()
        out.cancel()
        #expect(source.cancellations == 0)
        scheduler.advance()
        #expect(source.cancellations == 1)
        source.send(2)
        #expect(out.timeline == [.at(0, .subscription), .at(5, .value(1))])
        #expect(scheduler.isIdle)
    }

    @Test func subscribeOnForwardsCompletion() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.subscribe(on: scheduler).subscribe(out)
        scheduler.advance()
        source.send(completion: .failure(.oops))
        source.send(3)
        #expect(out.timeline == [.at(0, .subscription), .at(0, .failure(.oops))])
    }
}
