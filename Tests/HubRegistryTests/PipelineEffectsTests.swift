import HubRegistry
import HubEngine
import HubValue
import HubWire
import HubTesting
import Testing

/// `into`, `handleEvents(into:)`, running pipelines and what a failing value does
/// (`onError: fail | skip | restart`), logged with the pipeline's name and the value's sender.
@Suite("Named pipelines that write, run and survive bad values")
struct PipelineEffectsTests {
    typealias Recorder = RecordingSubscriber<Value, HubError>

    private func hub(_ scheduler: any Scheduler = ImmediateScheduler.shared, log: LogRecorder = LogRecorder()) throws -> Hub {
        let hub = Hub(configuration: .init(autoCreate: false), scheduler: scheduler, logger: log.logger())
        try hub.declareSubject("input")
        try hub.declareSubject("total", initialValue: 0)
        try hub.declareSubject("activity")
        return hub
    }

    private func total(_ hub: Hub) -> Value? {
        if case .subject(let subject)? = hub.entry(named: "total") { return subject.currentValue }
        return nil
    }

    @Test func aRunningPipelineKeepsASubjectUpToDateWithoutSubscribers() throws {
        let hub = try hub()
        let pipeline = try hub.declarePipeline("summer", source: "input | scan(0, $acc + .n) | into(total)", runs: true)
        try hub.startRunningPipelines()
        #expect(pipeline.isRunning)
        try hub.send(["n": 2], to: "input")
        try hub.send(["n": 3], to: "input")
        #expect(total(hub) == 5)
        let late = Recorder(initialDemand: .unlimited)
        try hub.publisher(for: "total").publisher.subscribe(late)
        #expect(late.values == [5], "a subscriber of the subject gets the state at once")
        hub.stopRunningPipelines()
        try hub.send(["n": 1], to: "input")
        #expect(total(hub) == 5)
    }

    /// A bad value once failed the shared reducer and its state was lost, with nothing
    /// logged. With `onError: skip` the value is skipped, logged with its sender, and the
    /// state goes on.
    @Test func skipKeepsTheStateAndLogsTheValueWithItsSender() throws {
        let log = LogRecorder()
        let hub = try hub(log: log)
        try hub.declarePipeline("summer", source: "input | scan(0, $acc + .n) | into(total)", onError: .skip, runs: true,
                                locate: { line, column in "hub.yml:\(line + 10):\(column + 4)" })
        try hub.startRunningPipelines()
        try hub.send(["n": 2], to: "input", sender: "session A")
        try hub.send(5, to: "input", sender: "session B (client \"cli\")")
        try hub.send(["n": "x"], to: "input", sender: "session C")
        try hub.send(["n": 3], to: "input", sender: "session A")
        #expect(total(hub) == 5)
        let skipped = log.entries("pipeline skipped a value")
        #expect(skipped.count == 2)
        #expect(skipped.map { $0.metadata["pipeline"] } == ["summer", "summer"])
        #expect(skipped.map { $0.metadata["sender"] } == ["session B (client \"cli\")", "session C"])
        #expect(skipped.first?.metadata["error"] == "hub.yml:11:28: scan(0, $acc + .n): '.n' needs an object, got int",
                "the failing expression's place in the file")
    }

    @Test func failStopsTheRunningPipelineAndLogsIt() throws {
        let log = LogRecorder()
        let hub = try hub(log: log)
        let pipeline = try hub.declarePipeline("summer", source: "input | scan(0, $acc + .n) | into(total)", runs: true)
        try hub.startRunningPipelines()
        try hub.send(["n": 2], to: "input")
        try hub.send(5, to: "input", sender: "session B")
        #expect(!pipeline.isRunning)
        try hub.send(["n": 3], to: "input")
        #expect(total(hub) == 2)
        #expect(log.entries("pipeline failed").first?.metadata["sender"] == "session B")
        #expect(log.entries("running pipeline stopped").count == 1)
    }

    @Test func restartStartsAgainFromScratchAfterABackoff() throws {
        let scheduler = TestScheduler()
        let log = LogRecorder()
        let hub = try hub(scheduler, log: log)
        let pipeline = try hub.declarePipeline("summer", source: "input | scan(0, $acc + .n) | into(total)",
                                               onError: .restart, runs: true)
        try hub.startRunningPipelines()
        try hub.send(["n": 2], to: "input")
        try hub.send(5, to: "input")
        #expect(pipeline.isRunning, "its own subscription is still there, waiting")
        #expect(log.entries("pipeline failed; restarting it after a back-off").count == 1)
        try hub.send(["n": 100], to: "input")
        #expect(total(hub) == 2, "not running during the back-off")
        scheduler.advance(by: .seconds(1))
        try hub.send(["n": 3], to: "input")
        #expect(total(hub) == 3, "the scan started from scratch")
        // A pipeline that fails forever waits longer and longer, never spins.
        for _ in 0..<5 {
            try hub.send(5, to: "input")
            scheduler.advance(by: .seconds(60))
        }
        #expect(log.entries("pipeline failed; restarting it after a back-off").count == 6)
    }

    @Test func intoChecksTheTargetsSchema() throws {
        let log = LogRecorder()
        let hub = Hub(configuration: .init(autoCreate: false), scheduler: ImmediateScheduler.shared, logger: log.logger())
        try hub.declareSubject("input")
        try hub.declareSubject("small", initialValue: 0, schema: try JSONSchema(["type": "integer", "maximum": 10]))
        try hub.declarePipeline("copy", source: "input | into(small)", onError: .skip, runs: true)
        try hub.startRunningPipelines()
        try hub.send(3, to: "input")
        try hub.send(30, to: "input", sender: "session Z")
        try hub.send(4, to: "input")
        if case .subject(let subject)? = hub.entry(named: "small") { #expect(subject.currentValue == 4) }
        #expect(log.entries("pipeline skipped a value").first?.metadata["error"]
                == "into(small): subject 'small' refuses the value: .: expected at most 10, got 30")
        #expect(log.entries("pipeline skipped a value").first?.metadata["sender"] == "session Z")
    }

    @Test func intoIsTheLastStageAndNeedsASubject() throws {
        let hub = try hub()
        #expect(throws: HubError(.pipelineError, "1:9: into(...) writes the pipeline's values into a subject: it must be the last stage",
                                 data: ["line": 1, "column": 9])) {
            try hub.compile(pipeline: "input | into(total) | map(.)")
        }
        #expect(throws: HubError(.notFound, "no subject named 'nope'")) { try hub.compile(pipeline: "input | into(nope)") }
        try hub.declareTrigger("t")
        #expect(throws: HubError(.notFound, "'t' is a trigger, not a subject")) { try hub.compile(pipeline: "input | into(t)") }
    }

    /// `into` and `handleEvents(into:)` write: the hub asks for `publish` permission on the
    /// name (ad-hoc pipeline text of a client that may only read is refused).
    @Test func writingNeedsPublishPermission() throws {
        let hub = try hub()
        let everyName = try NamePattern(">")
        let reader = Permissions([
            .subscribe: .init(allow: [everyName]), .pipelines: .init(allow: [everyName]),
        ])
        #expect(throws: HubError.self) { try hub.compile(pipeline: "input | into(total)", permissions: reader) }
        #expect(throws: HubError.self) {
            try hub.compile(pipeline: "input | handleEvents(into: activity, receiveOutput: .)", permissions: reader)
        }
        let writer = Permissions([
            .subscribe: .init(allow: [everyName]), .pipelines: .init(allow: [everyName]), .publish: .init(allow: [everyName]),
        ])
        _ = try hub.compile(pipeline: "input | into(total)", permissions: writer)
        do {
            _ = try hub.compile(pipeline: "input | into(total)", permissions: reader)
        } catch {
            #expect(error.code == .forbidden)
            #expect(error.message.hasPrefix("1:14: "), "\(error.message)")
        }
    }

    /// The book's network-activity publisher: handleEvents publishes true on subscription
    /// and false on completion or cancel into a subject, the stream itself unchanged.
    @Test func handleEventsTapsEventsIntoASubject() throws {
        let hub = try hub()
        let activity = Recorder(initialDemand: .unlimited)
        try hub.publisher(for: "activity").publisher.subscribe(activity)
        let recorder = Recorder(initialDemand: .max(1))
        try hub.compile(pipeline: """
            input | handleEvents(into: activity, receiveSubscription: true, receiveCompletion: false,
                                 receiveCancel: false, receiveOutput: {saw: .}, receiveRequest: {asked: .})
            """).subscribe(recorder)
        try hub.send(1, to: "input")
        recorder.request(.unlimited)
        try hub.send(2, to: "input")
        recorder.cancel()
        #expect(recorder.values == [1, 2])
        #expect(activity.values == [true, ["asked": 1], ["saw": 1], ["asked": "unlimited"], ["saw": 2], false])
    }

    @Test func aFailingTapIsLoggedAndIgnored() throws {
        let log = LogRecorder()
        let hub = try hub(log: log)
        try hub.declarePipeline("tapped", source: "input | handleEvents(into: activity, receiveOutput: .x + 1)", shared: false)
        let recorder = Recorder(initialDemand: .unlimited)
        try hub.publisher(for: "tapped").publisher.subscribe(recorder)
        try hub.send(["x": "a"], to: "input", sender: "session T")
        #expect(recorder.values == [["x": "a"]], "the stream goes on")
        #expect(log.entries("pipeline tap failed (ignored)").first?.metadata["sender"] == "session T")
    }

    /// A value that waited in a hot source's buffer keeps its sender until it is handled.
    @Test func aBufferedValueKeepsItsSender() throws {
        let log = LogRecorder()
        let hub = try hub(log: log)
        try hub.declarePipeline("perView", source: "input | map(.n * 2)", shared: false, onError: .skip)
        let recorder = Recorder(initialDemand: .none)
        try hub.publisher(for: "perView").publisher.subscribe(recorder)
        try hub.send(["n": 1], to: "input", sender: "session A")
        try hub.send("bad", to: "input", sender: "session B")
        try hub.send(["n": 2], to: "input", sender: "session C")
        recorder.request(.unlimited)
        #expect(recorder.values == [2, 4])
        #expect(log.entries("pipeline skipped a value").map { $0.metadata["sender"] } == ["session B"])
    }
}
