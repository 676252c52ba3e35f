import HubEngine
import HubRegistry
import HubTesting
import HubValue
import HubWire
import Testing

/// Subjects created on first use are forgotten once idle (100,000 invented names
/// once stayed forever): a sweep marks, the next one forgets what
/// stayed unused and unsubscribed; declared, subscribed and used names stay.
@Suite("Hub: idle names")
struct IdleNameTests {
    typealias Recorder = RecordingSubscriber<Value, HubError>

    static func names(_ hub: Hub) -> Set<String> { Set(hub.catalog().subjects.map(\.name)) }

    @Test func anUnusedAutoCreatedSubjectIsForgottenAtTheSecondSweep() throws {
        let hub = Hub(scheduler: TestScheduler())
        try hub.declareSubject("declared")
        for index in 0..<1000 { try hub.send(.int(Int64(index)), to: "invented.\(index)") }
        let watched = Recorder(initialDemand: .unlimited)
        try hub.subject(named: "watched").publisher.subscribe(watched)
        #expect(Self.names(hub).count == 1002)
        #expect(hub.sweepIdleNames() == 0)  // used since the last sweep: only marked
        try hub.send(1, to: "invented.7")  // used again
        #expect(hub.sweepIdleNames() == 999)
        #expect(Self.names(hub) == ["declared", "watched", "invented.7"])
        #expect(hub.sweepIdleNames() == 1)  // invented.7, unused since
        #expect(Self.names(hub) == ["declared", "watched"])
    }

    @Test func triggersCreatedOnFirstUseAreForgottenOnceIdleDeclaredOnesStay() throws {
        let hub = Hub(scheduler: TestScheduler())
        try hub.declareTrigger("declared")
        for index in 0..<500 { try hub.activate("invented\(index)", key: nil) }
        let watcher = Recorder(initialDemand: .unlimited)
        try hub.trigger(named: "watched", key: nil).subscribe(watcher)
        func triggers() -> Set<String> { Set(hub.catalog().triggers.map(\.name)) }
        #expect(triggers().count == 502)
        #expect(hub.sweepIdleNames() == 0)  // used since the last sweep: only marked
        try hub.activate("invented3", key: nil)
        #expect(hub.sweepIdleNames() == 499)
        #expect(triggers() == ["declared", "watched", "invented3"])
        #expect(hub.sweepIdleNames() == 1)
        #expect(triggers() == ["declared", "watched"])
        // The watcher still gets activations; a forgotten name is created again on use.
        try hub.activate("watched", key: "k")
        #expect(watcher.values == ["k"])
        try hub.activate("invented3", key: nil)
        #expect(triggers().contains("invented3"))
        // A trigger created on first use, then declared by a reload, stays.
        try hub.declareTrigger("invented3")
        hub.sweepIdleNames()
        hub.sweepIdleNames()
        #expect(triggers().contains("invented3"))
    }

    @Test func aCompletedSubjectStartsAfreshOnceForgotten() throws {
        let hub = Hub(scheduler: TestScheduler())
        try hub.complete("done")
        #expect(throws: HubError.self) { try hub.send(1, to: "done") }
        hub.sweepIdleNames()
        #expect(hub.sweepIdleNames() == 1)
        try hub.send(1, to: "done")
    }

    @Test func aHolderPublishingIntoAForgottenSubjectReachesTheLiveOne() throws {
        let hub = Hub(scheduler: TestScheduler())
        let held = try hub.subject(named: "target")  // as a pipeline's `into` holds it
        hub.sweepIdleNames()
        #expect(hub.sweepIdleNames() == 1)
        #expect(held.isRemoved)
        let subscriber = Recorder(initialDemand: .unlimited)
        try hub.subject(named: "target").publisher.subscribe(subscriber)
        hub.publish(42, to: held)
        #expect(subscriber.values == [42])
    }
}

@Suite("Hub: idle names, pipelines")
struct IdleNamePipelineTests {
    @Test func namesAPipelineOpenedAreForgottenOnceItIsCancelled() throws {
        let scheduler = TestScheduler()
        let hub = Hub(scheduler: scheduler)
        let publisher = try hub.compile(pipeline: "sequence([1, 2, 3]) | flatMap(subject(\"pipe\" + string(.)))")
        let subscriber = RecordingSubscriber<Value, HubError>(initialDemand: .max(1))
        publisher.subscribe(subscriber)
        scheduler.advance()
        let counts = try (1...3).map { try hub.subject(named: "pipe\($0)").subscriberCount }
        #expect(counts == [1, 1, 1])
        subscriber.cancel()
        scheduler.advance()
        let after = try (1...3).map { try hub.subject(named: "pipe\($0)").subscriberCount }
        #expect(after == [0, 0, 0])
    }
}
