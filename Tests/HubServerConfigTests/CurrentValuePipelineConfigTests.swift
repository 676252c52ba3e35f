import HubServer
import Testing

@Suite("Broker configuration: current-value pipelines")
struct CurrentValuePipelineConfigTests {
    @Test func currentValueIsReadAndDeclared() throws {
        let hub = try configuredHub("""
            subjects: {input: }
            pipelines:
              state: {source: "input | scan(0, $acc + .)", currentValue: true}
              plain: input | scan(0, $acc + .)
            """)
        guard case .pipeline(let state)? = hub.entry(named: "state"), case .pipeline(let plain)? = hub.entry(named: "plain") else {
            Issue.record("pipelines not declared")
            return
        }
        #expect(state.keepsCurrentValue && !plain.keepsCurrentValue)
        let early = ValueRecorder(demand: .unlimited)
        try hub.publisher(for: "state").publisher.subscribe(early)
        try hub.send(4, to: "input")
        let late = ValueRecorder(demand: .unlimited)
        try hub.publisher(for: "state").publisher.subscribe(late)
        #expect(late.values == [4])
    }

    @Test func currentValueNeedsASharedPipelineAndABoolean() {
        #expect(parseError("pipelines:\n  p:\n    source: a\n    shared: false\n    currentValue: true\n")
            == "hub.yml:5:19: pipelines.p.currentValue: currentValue needs a shared pipeline (shared: true)")
        #expect(parseError("pipelines:\n  p:\n    source: a\n    currentValue: 1\n")?.contains("pipelines.p.currentValue") == true)
    }
}
