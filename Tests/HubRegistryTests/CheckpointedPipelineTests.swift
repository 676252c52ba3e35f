import HubEngine
import HubRegistry
import HubTesting
import HubValue
import HubWire
import Testing

/// Running pipelines that checkpoint their state, in one hub on virtual time with stores in
/// memory: what they write waits for their checkpoint and is committed with it; a pipeline
/// stopped without a word (a crash) and started again resumes from its last checkpoint,
/// counting every input once; a changed text starts where `restartFrom` says.
@Suite("Checkpointed running pipelines")
struct CheckpointedPipelineTests {
    typealias Recorder = RecordingSubscriber<Value, HubError>

    /// A hub whose durable subjects (and the checkpoints) live in a memory store that
    /// outlives the pipelines started and stopped in a test, as a disk would.
    final class Fixture {
        let scheduler = TestScheduler()
        let log = LogRecorder()
        let hub: Hub
        let durable = MemoryStore()

        init(inputHistory: Bool = true) throws {
            hub = Hub(
                configuration: .init(autoCreate: false), scheduler: scheduler, logger: log.logger(),
                historyStore: MemoryStore(), durableStore: durable)
            if inputHistory {
                try hub.declareSubject("input", history: HistoryRetention(size: 100), durable: true)
            } else {
                try hub.declareSubject("input")
            }
            try hub.declareSubject("view", initialValue: 0, history: HistoryRetention(size: 100), durable: true)
        }

        /// Declares the pipeline `counter` with `source` and starts it.
        @discardableResult
        func start(
            _ source: String, policy: CheckpointPolicy = CheckpointPolicy(), onError: PipelineFailurePolicy = .fail
        ) throws -> NamedPipeline {
            let pipeline = try hub.declarePipeline("counter", source: source, onError: onError, runs: true, checkpoint: policy)
            try hub.startRunningPipelines()
            scheduler.advance()
            return pipeline
        }

        /// A crash: the pipeline goes without committing what it has not committed yet.
        func crash() {
            guard case .pipeline(let pipeline)? = hub.entry(named: "counter") else { return }
            pipeline.release()
            hub.removePipeline(named: "counter")
        }

        /// A clean stop (a shutdown, a reload): the pipeline commits, then goes.
        func stop() {
            hub.removePipeline(named: "counter")
            scheduler.advance()
        }

        func send(_ values: Value...) throws {
            for value in values { try hub.send(value, to: "input") }
        }

        var view: Value? {
            guard case .subject(let subject)? = hub.entry(named: "view") else { return nil }
            return subject.currentValue
        }

        /// A subscriber of the view's values from now on.
        func viewer() throws -> Recorder {
            let recorder = Recorder(initialDemand: .unlimited)
            try hub.publisher(for: "view").publisher.subscribe(recorder)
            return recorder
        }
    }

    static let sum = "input | scan(0, $acc + .) | into(view)"

    @Test func whatItWritesWaitsForItsCheckpoint() throws {
        let fixture = try Fixture()
        try fixture.start(Self.sum)
        try fixture.send(1, 2)
        #expect(fixture.view == 0, "nothing is written before the end of the pass")
        fixture.scheduler.advance()
        #expect(fixture.view == 3)
        let pipeline = try #require(fixture.hub.entry(named: "counter")).pipeline
        #expect(pipeline?.isCheckpointed == true)
    }

    @Test func aCrashResumesFromTheLastCheckpointCountingEveryInputOnce() throws {
        let fixture = try Fixture()
        try fixture.start(Self.sum)
        let viewer = try fixture.viewer()
        try fixture.send(1, 2, 3)
        fixture.scheduler.advance()
        #expect(fixture.view == 6)
        // Consumed, not committed: the crash loses it, the restart consumes it again.
        try fixture.send(4)
        fixture.crash()
        fixture.scheduler.advance()
        #expect(fixture.view == 6)
        try fixture.start(Self.sum)
        fixture.scheduler.advance()
        #expect(fixture.view == 10)
        try fixture.send(5)
        fixture.scheduler.advance()
        #expect(fixture.view == 15)
        #expect(viewer.values == [0, 1, 3, 6, 10, 15] || viewer.values == [0, 3, 6, 10, 15] || viewer.values == [0, 6, 10, 15],
                "the view never goes back: \(viewer.values)")
        #expect(fixture.log.entries("running pipeline resumes from its checkpoint").count == 1)
    }

    @Test func aCrashBeforeItsFirstCheckpointWithValuesLosesNothing() throws {
        let fixture = try Fixture()
        // Checkpoints far apart: the values below are consumed and not committed.
        try fixture.start(Self.sum, policy: CheckpointPolicy(every: nil, interval: .seconds(10)))
        try fixture.send(1, 2)
        fixture.scheduler.advance()
        fixture.crash()
        try fixture.start(Self.sum)
        fixture.scheduler.advance()
        #expect(fixture.view == 3, "the start's own checkpoint: 1 and 2 are consumed again")
        #expect(fixture.log.entries("running pipeline resumes from its checkpoint").count == 1)
    }

    @Test func aCleanStopCommitsWhatWasPending() throws {
        let fixture = try Fixture()
        try fixture.start(Self.sum, policy: CheckpointPolicy(every: nil, interval: .seconds(10)))
        try fixture.send(1, 2)
        fixture.scheduler.advance()
        #expect(fixture.view == 0, "the checkpoint is due in 10 s")
        fixture.stop()
        #expect(fixture.view == 3, "stopping committed it")
        try fixture.start(Self.sum, policy: CheckpointPolicy(every: nil, interval: .seconds(10)))
        try fixture.send(4)
        fixture.scheduler.advance(by: .seconds(10))
        #expect(fixture.view == 7)
    }

    @Test func checkpointsComeEveryCountOfValuesOrInterval() throws {
        let fixture = try Fixture()
        try fixture.start(Self.sum, policy: CheckpointPolicy(every: 3, interval: .seconds(1)))
        try fixture.send(1, 2)
        fixture.scheduler.advance(by: .milliseconds(500))
        #expect(fixture.view == 0)
        try fixture.send(3)
        fixture.scheduler.advance()
        // Three consumed (and three written): due by count.
        #expect(fixture.view == 6)
        try fixture.send(4)
        fixture.scheduler.advance(by: .milliseconds(999))
        #expect(fixture.view == 6)
        fixture.scheduler.advance(by: .milliseconds(1))
        #expect(fixture.view == 10, "due by time, a second after the first value since the last checkpoint")
    }

    @Test func aChangedTextStartsAfreshFromTheBeginningWithoutWritingAgain() throws {
        let fixture = try Fixture()
        try fixture.start(Self.sum)
        try fixture.send(1, 2, 3)
        fixture.scheduler.advance()
        fixture.stop()
        let viewer = try fixture.viewer()
        // The new text counts doubles: rebuilt from the history (1, 2, 3), quietly.
        try fixture.start("input | scan(0, $acc + . * 2) | into(view)")
        fixture.scheduler.advance()
        #expect(viewer.values == [6], "nothing is written while the state is rebuilt: \(viewer.values)")
        try fixture.send(4)
        fixture.scheduler.advance()
        #expect(viewer.values == [6, 20])
        let notice = try #require(fixture.log.entries("running pipeline starts afresh").first)
        #expect(notice.metadata["restartFrom"] == "beginning")
        #expect(notice.metadata["reason"]?.contains("its text changed") == true)
    }

    @Test func restartFromCheckpointKeepsTheStateOfTheStagesThatDidNotChange() throws {
        let fixture = try Fixture()
        let policy = CheckpointPolicy(restartFrom: .checkpoint)
        try fixture.start(Self.sum, policy: policy)
        try fixture.send(1, 2, 3)
        fixture.scheduler.advance()
        fixture.stop()
        // A stage added after the scan: the scan (stage 1) keeps its sum.
        try fixture.start("input | scan(0, $acc + .) | map(. * 10) | into(view)", policy: policy)
        try fixture.send(4)
        fixture.scheduler.advance()
        #expect(fixture.view == 100)
        // A stage added before it: stage 1 is another operator, so the scan starts afresh.
        fixture.stop()
        try fixture.start("input | map(.) | scan(0, $acc + .) | into(view)", policy: policy)
        try fixture.send(5)
        fixture.scheduler.advance()
        #expect(fixture.view == 5)
    }

    @Test func restartFromLatestStartsAfreshFromTheNextValues() throws {
        let fixture = try Fixture()
        let policy = CheckpointPolicy(restartFrom: .latest)
        try fixture.start(Self.sum, policy: policy)
        try fixture.send(1, 2, 3)
        fixture.scheduler.advance()
        fixture.stop()
        try fixture.start("input | scan(100, $acc + .) | into(view)", policy: policy)
        fixture.scheduler.advance()
        #expect(fixture.view == 6)
        try fixture.send(4)
        fixture.scheduler.advance()
        #expect(fixture.view == 104)
    }

    @Test func aStateThatCannotBeReadStartsAfreshAndSaysWhy() throws {
        let fixture = try Fixture()
        try fixture.start(Self.sum)
        try fixture.send(1, 2)
        fixture.scheduler.advance()
        fixture.stop()
        // The same text, but its scan's state was written by another operator.
        var stored: Value?
        fixture.durable.loadCheckpoint(pipeline: "counter") { stored = try? $0.get() }
        var checkpoint = try PipelineCheckpoint(value: try #require(stored))
        checkpoint.operators = ["1:scan": ["op": "buffer", "v": 1, "values": []]]
        fixture.durable.commit(checkpoint: checkpoint.value, pipeline: "counter", appending: {}, completion: { _ in })
        try fixture.start(Self.sum)
        fixture.scheduler.advance()
        let error = try #require(fixture.log.entries("running pipeline's checkpoint cannot be restored: it starts afresh").first)
        #expect(error.metadata["states"]?.contains("written by 'buffer'") == true)
        #expect(error.metadata["restartFrom"] == "beginning")
        // Rebuilt from the history, quietly: the next value makes the right sum.
        #expect(fixture.view == 3)
        try fixture.send(3)
        fixture.scheduler.advance()
        #expect(fixture.view == 6)
    }

    @Test func aSourceWithoutHistoryIsLiveButTheStateStillResumes() throws {
        let fixture = try Fixture(inputHistory: false)
        try fixture.start(Self.sum)
        try fixture.send(1, 2)
        fixture.scheduler.advance()
        fixture.crash()
        // Sent while the pipeline is down: not there to consume.
        try fixture.send(100)
        try fixture.start(Self.sum)
        try fixture.send(3)
        fixture.scheduler.advance()
        #expect(fixture.view == 6)
    }

    @Test func prependIsNotEmittedAgainWhenItResumes() throws {
        let fixture = try Fixture()
        let source = "input | scan(0, $acc + .) | prepend(0) | into(view)"
        try fixture.start(source)
        try fixture.send(5)
        fixture.scheduler.advance()
        fixture.crash()
        let viewer = try fixture.viewer()
        try fixture.start(source)
        try fixture.send(1)
        fixture.scheduler.advance()
        #expect(viewer.values == [5, 6], "\(viewer.values)")
    }

    @Test func flatMapInnerPipelinesResumeWithTheirTimers() throws {
        let fixture = try Fixture()
        let source = "input | flatMap(just(.) | delay(100ms)) | scan(0, $acc + .) | into(view)"
        try fixture.start(source)
        try fixture.send(1)
        fixture.scheduler.advance(by: .milliseconds(40))
        try fixture.send(2)
        fixture.scheduler.advance(by: .milliseconds(10))
        // Both in flight, the last checkpoint taken when the second arrived (at 40 ms); a
        // crash, and the restart 30 ms (virtual) later.
        fixture.crash()
        fixture.scheduler.advance(by: .milliseconds(30))
        try fixture.start(source)
        fixture.scheduler.advance(by: .milliseconds(59))
        #expect(fixture.view == 0)
        fixture.scheduler.advance(by: .milliseconds(1))
        #expect(fixture.view == 1, "the first value had 60 ms left at the checkpoint")
        fixture.scheduler.advance(by: .milliseconds(40))
        #expect(fixture.view == 3, "and the second 100 ms, each delivered once")
    }

    @Test func aFailingValueStopsThePipelineWithoutCommittingIt() throws {
        let fixture = try Fixture()
        try fixture.start("input | scan(0, $acc + 10 / .) | into(view)")
        try fixture.send(5)
        fixture.scheduler.advance()
        #expect(fixture.view == 2)
        try fixture.send(0)
        fixture.scheduler.advance()
        #expect(fixture.log.entries("running pipeline stopped").count == 1)
        let pipeline = try #require(fixture.hub.entry(named: "counter")?.pipeline)
        #expect(!pipeline.isRunning)
    }
}

extension Hub.Entry {
    /// The named pipeline, if it is one.
    var pipeline: NamedPipeline? {
        if case .pipeline(let pipeline) = self { return pipeline }
        return nil
    }
}
