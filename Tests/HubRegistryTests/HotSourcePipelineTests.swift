import HubRegistry
import HubEngine
import HubValue
import HubWire
import HubTesting
import Testing

/// PIPELINES.md §5, the one rule for hot sources inside a pipeline: each use of a subject,
/// named pipeline or trigger keeps the values that arrive without demand in a buffer of its
/// own with the subscription's `buffer` and `overflow` (PROTOCOL.md §5.7), exactly as a
/// subscription `to:` that name; the latest-keeping combinators read their inputs unlimited.
@Suite("Hot sources inside pipelines")
struct HotSourcePipelineTests {
    typealias Recorder = RecordingSubscriber<Value, HubError>

    private func hub() throws -> Hub {
        let hub = Hub(configuration: .init(autoCreate: false), scheduler: ImmediateScheduler.shared)
        for name in ["a", "b", "c", "orders"] { try hub.declareSubject(name) }
        return hub
    }

    private func subscribe(
        _ hub: Hub, pipeline: String, demand: Subscribers.Demand = .none, buffer: Int? = nil, overflow: OverflowPolicy? = nil
    ) throws -> Recorder {
        let recorder = Recorder(initialDemand: demand)
        try hub.compile(pipeline: pipeline, bufferSize: buffer, overflow: overflow).subscribe(recorder)
        return recorder
    }

    @Test func valuesWithoutDemandWaitInTheSourcesBufferAsForASubscriptionTo() throws {
        let hub = try hub()
        let piped = try subscribe(hub, pipeline: "orders | map(. * 10)")
        let direct = Recorder(initialDemand: .none)
        try hub.publisher(for: "orders").publisher.subscribe(direct)
        for v in 1...3 { try hub.send(.int(Int64(v)), to: "orders") }
        piped.request(.max(3))
        direct.request(.max(3))
        #expect(piped.values == [10, 20, 30], "nothing dropped while the pipeline had no demand")
        #expect(direct.values == [1, 2, 3])
    }

    @Test func theSubscriptionsOverflowPolicyAppliesToEachHotSource() throws {
        let hub = try hub()
        let failing = try subscribe(hub, pipeline: "orders | map(.)", buffer: 2, overflow: .error)
        let latest = try subscribe(hub, pipeline: "orders | map(.)", buffer: 2, overflow: .dropOldest)
        for v in 1...3 { try hub.send(.int(Int64(v)), to: "orders") }
        #expect(failing.events.last == .failure(HubError(.overflow, "the subscription's buffer of 2 values overflowed",
                                                          data: ["buffered": 2])))
        latest.request(.unlimited)
        #expect(latest.values == [2, 3])
    }

    /// Demand 0, a=1, b=2, c=3, a=4, then request(1) once gave [1,2,3] (then [4,2,3],
    /// [5,2,3] one request at a time): the combinators asked each hot source's buffer for one
    /// value. They now read their inputs unlimited and deliver the latest of each.
    @Test(arguments: ["reduceLatest(a, b, c)", "combineLatest(a, b, c)", "accumulateLatest(a, b, c)",
                      "a | reduceLatest(b, c)", "a | combineLatest(b, c)", "a | accumulateLatest(b, c)"])
    func combinatorsDeliverTheLatestOfEachAndNothingStale(pipeline: String) throws {
        let hub = try hub()
        let recorder = try subscribe(hub, pipeline: pipeline)
        try hub.send(1, to: "a"); try hub.send(2, to: "b"); try hub.send(3, to: "c"); try hub.send(4, to: "a")
        recorder.request(.max(1))
        #expect(recorder.values == [[4, 2, 3]], "\(pipeline)")
        recorder.request(.max(1))
        #expect(recorder.values == [[4, 2, 3]], "\(pipeline): nothing new, nothing sent")
        try hub.send(5, to: "a")
        #expect(recorder.values == [[4, 2, 3], [5, 2, 3]], "\(pipeline)")
    }

    @Test func theCombinatorsInputsNeverOverflowTheirBuffers() throws {
        let hub = try hub()
        let recorder = try subscribe(hub, pipeline: "combineLatest(a, b)", buffer: 1, overflow: .error)
        for v in 1...5 { try hub.send(.int(Int64(v)), to: "a") }
        try hub.send(9, to: "b")
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value([5, 9])])
    }
}
