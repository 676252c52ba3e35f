import HubRegistry
import HubEngine
import HubValue
import HubWire
import HubTesting
import Testing

@Suite("Current-value named pipelines")
struct CurrentValuePipelineTests {
    typealias Recorder = RecordingSubscriber<Value, HubError>

    private func hub(_ source: String = "input | scan(0, $acc + .) | prepend(0)") throws -> Hub {
        let hub = Hub(configuration: .init(autoCreate: false), scheduler: ImmediateScheduler.shared)
        try hub.declareSubject("input", initialValue: nil)
        try hub.declarePipeline("total", source: source, currentValue: true)
        try hub.declarePipeline("plain", source: source)
        return hub
    }

    private func subscribe(_ hub: Hub, _ name: String, demand: Subscribers.Demand = .unlimited) throws -> Recorder {
        let recorder = Recorder(initialDemand: demand)
        try hub.publisher(for: name).publisher.subscribe(recorder)
        return recorder
    }

    @Test func aLateSubscriberGetsTheLatestValueFirstThenTheFollowingOnes() throws {
        let hub = try hub()
        let early = try subscribe(hub, "total")
        try hub.send(2, to: "input")
        try hub.send(3, to: "input")
        let late = try subscribe(hub, "total")
        try hub.send(4, to: "input")
        #expect(early.events == [.subscription, .value(0), .value(2), .value(5), .value(9)])
        #expect(late.events == [.subscription, .value(5), .value(9)])
        // Without currentValue, the late subscriber only sees what comes after it.
        let plainEarly = try subscribe(hub, "plain")
        try hub.send(1, to: "input")
        let plainLate = try subscribe(hub, "plain")
        try hub.send(1, to: "input")
        #expect(plainEarly.values == [0, 1, 2])
        #expect(plainLate.values == [2])
    }

    @Test func theLatestValueWaitsInTheSubscribersBufferForDemand() throws {
        let hub = try hub()
        let early = try subscribe(hub, "total")
        try hub.send(7, to: "input")
        let late = try subscribe(hub, "total", demand: .none)
        try hub.send(1, to: "input")
        #expect(late.values == [])
        late.request(.max(1))
        #expect(late.values == [7])
        late.request(.max(1))
        #expect(late.values == [7, 8])
        #expect(early.values == [0, 7, 8])
    }

    @Test func theValueIsForgottenWhenTheLastSubscriberLeaves() throws {
        let hub = try hub()
        guard case .pipeline(let total)? = hub.entry(named: "total") else { Issue.record("no pipeline"); return }
        #expect(total.keepsCurrentValue)
        let first = try subscribe(hub, "total")
        try hub.send(5, to: "input")
        #expect(total.currentValue == 5)
        first.cancel()
        #expect(total.currentValue == nil)
        let next = try subscribe(hub, "total")
        #expect(next.values == [0])
        #expect(total.currentValue == 0)
    }

    @Test func aCompletedPipelineStartsAgainForTheNextSubscriber() throws {
        let hub = try hub("input | first()")
        let first = try subscribe(hub, "total")
        try hub.send(1, to: "input")
        #expect(first.events == [.subscription, .value(1), .finished])
        let next = try subscribe(hub, "total")
        #expect(next.events == [.subscription])
        try hub.send(2, to: "input")
        #expect(next.values == [2])
    }

    @Test func onlyASharedPipelineKeepsACurrentValue() throws {
        let hub = Hub(configuration: .init(autoCreate: true), scheduler: ImmediateScheduler.shared)
        #expect(throws: HubError(.badMessage, "pipeline 'each': currentValue needs a shared pipeline")) {
            try hub.declarePipeline("each", source: "input", shared: false, currentValue: true)
        }
    }
}
