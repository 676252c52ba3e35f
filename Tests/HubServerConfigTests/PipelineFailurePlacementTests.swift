import HubRegistry
import HubEngine
import HubValue
import HubWire
import HubServer
import HubTesting
import Testing

/// A named pipeline's run-time failure once named its position from the start of the
/// pipeline text ("line 3, column 7" of a text that starts on line 31 of the file), and its
/// message repeated the whole multi-line scan stage, once in `message` and once in `data`.
@Suite("Named pipelines' failures point into the configuration file")
struct PipelineFailurePlacementTests {
    static let yaml = """
        autoCreate: false
        subjects:
          input:
        pipelines:
          state:
            onError: fail
            source: |
              input
                | scan({count: 0},
                    .type == "add"
                      ? {count: $acc.count + 1}
                      : $acc)
        """

    @Test func aFailureNamesTheFilePositionOfTheFailingExpressionAndAShortStage() throws {
        let log = LogRecorder()
        let configuration = try parseBroker(yaml: Self.yaml, file: "hub.yml")
        let hub = Hub(configuration: configuration.service.hub, scheduler: ImmediateScheduler.shared, logger: log.logger())
        try configuration.declare(in: hub)
        let recorder = RecordingSubscriber<Value, HubError>(initialDemand: .unlimited)
        try hub.publisher(for: "state").publisher.subscribe(recorder)
        try hub.send(["type": "add"], to: "input")
        try hub.send(5, to: "input", sender: "session S")
        guard case .failure(let error)? = recorder.events.last else {
            Issue.record("no failure: \(recorder.events)")
            return
        }
        // `.type` is on line 10, column 13 of the file (line 3, column 7 of the text).
        #expect(error.message == "hub.yml:10:13: scan({count: 0},…: '.type' needs an object, got int")
        #expect(error.data?["at"] == "hub.yml:10:13")
        #expect(error.data?["stage"] == "scan({count: 0},…")
        #expect(error.data?["line"] == 3, "the position in the text stays in data")
        let logged = log.entries("pipeline failed")
        #expect(logged.count == 1)
        #expect(logged.first?.metadata["pipeline"] == "state")
        #expect(logged.first?.metadata["sender"] == "session S")
        #expect(logged.first?.metadata["error"] == error.message)
    }
}
