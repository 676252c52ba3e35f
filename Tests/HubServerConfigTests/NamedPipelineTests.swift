import HubRegistry
import HubEngine
import HubValue
import HubWire
import HubServer
import Testing

@Suite("Named pipelines")
struct NamedPipelineTests {
    static let yaml = """
        autoCreate: false
        subjects:
          orders:
          prices: {initial: 10}
        triggers: [refresh]
        pipelines:
          big: orders | filter(.qty > 100)
          each: {source: "orders | filter(.qty > 100)", shared: false}
          total: orders | scan(0, $acc + .qty)
          counts: {source: "sequence([1, 2, 3, 4, 5])", buffer: 2, overflow: error}
          countsEach: {source: "sequence([1, 2, 3, 4, 5])", shared: false, buffer: 2, overflow: error}
          refreshes: trigger(refresh)
        """

    static func order(_ qty: Int64) -> Value { ["qty": .int(qty)] }

    static func subject(_ hub: Hub, _ name: String) throws -> HubSubject {
        guard case .subject(let subject)? = hub.entry(named: name) else { throw HubError(.notFound, name) }
        return subject
    }

    static func pipeline(_ hub: Hub, _ name: String) throws -> NamedPipeline {
        guard case .pipeline(let pipeline)? = hub.entry(named: name) else { throw HubError(.notFound, name) }
        return pipeline
    }

    @discardableResult
    static func subscribe(_ hub: Hub, _ name: String, demand: Subscribers.Demand = .unlimited, buffer: Int? = nil,
                          overflow: OverflowPolicy? = nil) throws -> ValueRecorder {
        let recorder = ValueRecorder(demand: demand)
        let resolved = try hub.publisher(for: name, bufferSize: buffer, overflow: overflow)
        resolved.publisher.subscribe(recorder)
        return recorder
    }

    @Test func theConfigurationDeclaresEveryKind() throws {
        let hub = try configuredHub(Self.yaml)
        #expect(try Self.subject(hub, "orders").kind == .passthrough)
        #expect(try Self.subject(hub, "prices").kind == .currentValue)
        #expect(try Self.subject(hub, "prices").currentValue == 10)
        guard case .trigger? = hub.entry(named: "refresh") else { Issue.record("refresh is not a trigger"); return }
        #expect(try Self.pipeline(hub, "big").isShared)
        #expect(try Self.pipeline(hub, "each").isShared == false)
        #expect(try Self.pipeline(hub, "counts").bufferSize == 2)
        #expect(hub.entry(named: "big")?.kindName == "pipeline")
        // autoCreate: false, and nothing else was created by compiling the pipelines.
        #expect(hub.allEntries.map(\.name) == ["big", "counts", "countsEach", "each", "orders", "prices", "refresh", "refreshes", "total"])
    }

    @Test func aSharedPipelineSubscribesUpstreamOnceAndEachSubscriberHasItsOwnDemand() throws {
        let hub = try configuredHub(Self.yaml)
        let orders = try Self.subject(hub, "orders")
        let slow = try Self.subscribe(hub, "big", demand: .max(1))
        let fast = try Self.subscribe(hub, "big")
        #expect(orders.subscriberCount == 1)
        for qty: Int64 in [150, 5, 200, 300] { try hub.send(Self.order(qty), to: "orders") }
        #expect(fast.values == [Self.order(150), Self.order(200), Self.order(300)])
        #expect(slow.values == [Self.order(150)])
        slow.request(.max(5))
        #expect(slow.values == [Self.order(150), Self.order(200), Self.order(300)])
        #expect(try Self.pipeline(hub, "big").subscriberCount == 2)
    }

    @Test func aPerSubscriberPipelineIsCompiledForEachSubscriber() throws {
        let hub = try configuredHub(Self.yaml)
        let orders = try Self.subject(hub, "orders")
        let a = try Self.subscribe(hub, "each")
        let b = try Self.subscribe(hub, "each", demand: .max(1))
        #expect(orders.subscriberCount == 2)
        for qty: Int64 in [150, 200] { try hub.send(Self.order(qty), to: "orders") }
        #expect(a.values == [Self.order(150), Self.order(200)])
        #expect(b.values == [Self.order(150)])
        #expect(try Self.pipeline(hub, "each").subscriberCount == 2)
        a.cancel()
        #expect(orders.subscriberCount == 1)
        #expect(try Self.pipeline(hub, "each").subscriberCount == 1)
    }

    /// Shared: the fan-out asks the pipeline for everything, so a cold source
    /// runs at once into the subscriber's buffer. Per-subscriber: demand goes
    /// end to end, so the source produces only what is requested.
    @Test func demandIsEndToEndOnlyPerSubscriber() throws {
        let hub = try configuredHub(Self.yaml)
        let shared = try Self.subscribe(hub, "counts", demand: .max(1))
        #expect(shared.events == [.value(1), .failure(.overflow)])

        let own = try Self.subscribe(hub, "countsEach", demand: .max(1))
        #expect(own.events == [.value(1)])
        own.request(.max(4))
        #expect(own.events == [.value(1), .value(2), .value(3), .value(4), .value(5), .finished])
    }

    @Test func aLateSubscriberSeesOnlyLaterValuesAndTheStateSoFar() throws {
        let hub = try configuredHub(Self.yaml)
        let early = try Self.subscribe(hub, "total")
        for qty: Int64 in [1, 2] { try hub.send(Self.order(qty), to: "orders") }
        let late = try Self.subscribe(hub, "total")
        try hub.send(Self.order(3), to: "orders")
        #expect(early.values == [1, 3, 6])
        #expect(late.values == [6])
    }

    @Test func theLastSubscriberLeavingClosesTheConnectionAndTheNextStartsAfresh() throws {
        let hub = try configuredHub(Self.yaml)
        let orders = try Self.subject(hub, "orders")
        let total = try Self.pipeline(hub, "total")
        let a = try Self.subscribe(hub, "total")
        let b = try Self.subscribe(hub, "total")
        try hub.send(Self.order(5), to: "orders")
        #expect(total.isConnected)
        a.cancel()
        #expect(orders.subscriberCount == 1 && total.subscriberCount == 1)
        b.cancel()
        #expect(orders.subscriberCount == 0 && total.subscriberCount == 0)
        #expect(!total.isConnected)
        try hub.send(Self.order(7), to: "orders")
        let c = try Self.subscribe(hub, "total")
        try hub.send(Self.order(1), to: "orders")
        #expect(c.values == [1])
        #expect(a.values == [5] && b.values == [5])
    }

    @Test func aCompletedSharedPipelineRestartsForTheNextSubscriber() throws {
        let hub = try configuredHub(Self.yaml)
        let first = try Self.subscribe(hub, "countsEach")
        #expect(first.events == [.value(1), .value(2), .value(3), .value(4), .value(5), .finished])
        let a = try Self.subscribe(hub, "counts", demand: .max(10), buffer: 10)
        #expect(a.events == [.value(1), .value(2), .value(3), .value(4), .value(5), .finished])
        #expect(try Self.pipeline(hub, "counts").subscriberCount == 0)
        let b = try Self.subscribe(hub, "counts", buffer: 10)
        #expect(b.events == a.events)
    }

    @Test func aSubjectCompletionReachesEverySubscriber() throws {
        let hub = try configuredHub(Self.yaml)
        let a = try Self.subscribe(hub, "big")
        let b = try Self.subscribe(hub, "big", demand: .none)
        try hub.send(Self.order(500), to: "orders")
        try hub.complete("orders")
        #expect(a.events == [.value(Self.order(500)), .finished])
        // The buffered value comes first, and the completion needs no demand.
        #expect(b.events.isEmpty)
        b.request(.max(1))
        #expect(b.events == [.value(Self.order(500)), .finished])
        #expect(try Self.pipeline(hub, "big").subscriberCount == 0)
    }

    @Test func aSlowSubscriberOverflowsAlone() throws {
        let hub = try configuredHub(Self.yaml)
        let slow = try Self.subscribe(hub, "big", demand: .none, buffer: 1, overflow: .error)
        let fast = try Self.subscribe(hub, "big")
        for qty: Int64 in [101, 102, 103] { try hub.send(Self.order(qty), to: "orders") }
        #expect(slow.events == [.failure(.overflow)])
        #expect(fast.values == [Self.order(101), Self.order(102), Self.order(103)])
        #expect(try Self.pipeline(hub, "big").subscriberCount == 1)
        #expect(try Self.subject(hub, "orders").subscriberCount == 1)
    }

    @Test func aSubscriberGetsThePipelinesBufferSettingsUnlessItAsks() throws {
        let hub = try configuredHub(Self.yaml)
        // counts: buffer 2, overflow error (from the file).
        let small = try Self.subscribe(hub, "counts", demand: .none)
        #expect(small.events == [.failure(.overflow)])
        let asked = try Self.subscribe(hub, "counts", demand: .none, buffer: 5)
        #expect(asked.events.isEmpty)
        asked.request(.unlimited)
        #expect(asked.events == [.value(1), .value(2), .value(3), .value(4), .value(5), .finished])
    }

    @Test func aBareNameInAPipelineResolvesToTheNamedPipeline() throws {
        let hub = try configuredHub(Self.yaml)
        let direct = try Self.subscribe(hub, "big")
        let composed = ValueRecorder(demand: .unlimited)
        try hub.compile(pipeline: "big | map(.qty * 2)").subscribe(composed)
        // Both share the one connection of `big`.
        #expect(try Self.subject(hub, "orders").subscriberCount == 1)
        #expect(try Self.pipeline(hub, "big").subscriberCount == 2)
        for qty: Int64 in [150, 5] { try hub.send(Self.order(qty), to: "orders") }
        #expect(direct.values == [Self.order(150)])
        #expect(composed.values == [300])
    }

    @Test func namedPipelinesComposeWithTriggers() throws {
        let hub = try configuredHub(Self.yaml)
        let refreshes = try Self.subscribe(hub, "refreshes")
        try hub.activate("refresh", key: "k")
        try hub.activate("refresh", key: nil)
        #expect(refreshes.values == ["k", .null])
    }

    @Test func theCatalogListsPipelinesWithTheirSubscribers() throws {
        let hub = try configuredHub(Self.yaml)
        let a = try Self.subscribe(hub, "big")
        _ = try Self.subscribe(hub, "big")
        _ = try Self.subscribe(hub, "each")
        var catalog = hub.catalog()
        #expect(catalog.pipelines == [
            .init(name: "big", subscribers: 2), .init(name: "counts", subscribers: 0),
            .init(name: "countsEach", subscribers: 0), .init(name: "each", subscribers: 1),
            .init(name: "refreshes", subscribers: 0), .init(name: "total", subscribers: 0),
        ])
        #expect(catalog.subjects.map(\.name) == ["orders", "prices"])
        #expect(catalog.triggers == ["refresh"])
        a.cancel()
        catalog = hub.catalog()
        #expect(catalog.pipelines.first == .init(name: "big", subscribers: 1))
    }

    @Test func sendAndTriggerToAPipelineAreNotFound() throws {
        let hub = try configuredHub(Self.yaml)
        #expect(throws: HubError(.notFound, "'big' is a pipeline, not a subject")) {
            try hub.send(1, to: "big")
        }
        #expect(throws: HubError(.notFound, "'big' is a pipeline, not a subject")) {
            try hub.complete("big")
        }
        #expect(throws: HubError(.notFound, "'big' is a pipeline, not a trigger")) {
            try hub.activate("big", key: nil)
        }
        #expect(throws: HubError(.notFound, "'big' is a pipeline, not a trigger")) {
            _ = try hub.compile(pipeline: "trigger(big)")
        }
    }

    @Test func declaringAPipelineChecksItsNameTextAndBuffer() {
        let hub = Hub(scheduler: ImmediateScheduler.shared)
        #expect(throws: HubError.self) { try hub.declarePipeline("9p", source: "a") }
        #expect((try? hub.declarePipeline("p", source: "a | map(")) == nil)
        #expect((try? hub.declarePipeline("p", source: "a", bufferSize: 0)) == nil)
        #expect((try? hub.declarePipeline("p", source: "a")) != nil)
        #expect(throws: HubError(.badMessage, "'p' is already declared as a pipeline")) {
            try hub.declareSubject("p")
        }
        do {
            try hub.declarePipeline("q", source: "a | map(")
        } catch {
            #expect(error.code == .pipelineError)
        }
    }
}
