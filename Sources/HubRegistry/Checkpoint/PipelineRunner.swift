import HubEngine
import HubPipeline
import HubValue
import HubWire
import Logging

/// Runs a named pipeline with `run: true` whose state is checkpointed (``CheckpointPolicy``):
/// its sources with history are consumed from their checkpointed offsets, its operators
/// restore their checkpointed states, and what it writes `into` subjects is committed
/// together with its next checkpoint, in one transaction of the store, before any
/// subscriber sees it. After a crash it resumes from its last checkpoint: every input
/// is counted once, and no output is repeated or lost.
///
/// - **Start.** It reads its last checkpoint from the store, compares the hash of the
///   text it was taken from with its own (a changed text starts from
///   ``CheckpointPolicy/restartFrom``, and says so), compiles the pipeline with the
///   checkpointed states to restore, subscribes to it with unlimited demand, checks that
///   every state could be read, and only then lets its sources deliver (they replay what
///   was committed after their checkpointed offsets, then go on live).
/// - **A consistent cut.** The pipeline runs on the hub's loop: between two passes
///   nothing is in flight inside it, so the states of its operators and its sources'
///   offsets at the end of a pass belong together.
/// - **Commits.** Values written `into` subjects wait in the runner. When a checkpoint is
///   due, at the end of the pass, the runner takes the snapshot and hands it to the store
///   with the values waiting: those into the store's own subjects (durable subjects) are
///   appended in the same transaction; the others are published once it is stored. One
///   commit is stored at a time; what comes meanwhile goes into the next one.
/// - **Failures.** A commit that fails, or a pipeline that fails with
///   ``PipelineFailurePolicy/restart``, starts again from the last checkpoint stored
///   (after a back-off); with ``PipelineFailurePolicy/fail`` it stops, as a running
///   pipeline without checkpoints does.
///
/// Confined to the hub's loop.
final class PipelineRunner {
    /// What the environment of a pipeline compiled by a runner asks it.
    private(set) var registry = CheckpointRegistry()

    private unowned let pipeline: NamedPipeline
    private unowned let hub: Hub
    private let store: any SubjectStore
    private let policy: CheckpointPolicy
    private let textHash: String
    private var logger: Logger { hub.logger }

    /// Each (re)start's number: what completes for an earlier one is ignored.
    private var generation = 0
    private var subscription: AnyCancellable?
    private var gate = SourceGate()
    /// Whether the pipeline is being compiled and subscribed (its sources with history are
    /// the runner's then).
    private var building = false
    private var stopped = false

    /// Where each source with history starts, by key (from the checkpoint).
    private var resumeAt: [String: PipelineCheckpoint.SourcePosition] = [:]
    /// Whether sources without a checkpointed position start from the oldest kept value.
    private var fromBeginning = false
    /// Starting afresh from the beginning after a checkpoint: where that checkpoint's
    /// sources were. Until the sources pass those offsets, the pipeline rebuilds its state
    /// from values an earlier instance consumed and wrote for already: what it writes then
    /// is dropped, not written a second time.
    private var quietUntil: [String: PipelineCheckpoint.SourcePosition] = [:]
    /// The sources with history of the running instance, by key.
    private var cursors: [String: SourceCursor] = [:]
    private var occurrences: [String: Int] = [:]
    private var consumed: UInt64 = 0

    /// Values written and not committed yet, in order.
    private var pending: [Output] = []
    /// Values consumed, and values written, since the last checkpoint.
    private var consumedSince = 0
    private var writtenSince = 0
    /// The most values written that wait for a commit: a commit is due at this many,
    /// whatever the policy, so that the waiting values stay bounded.
    static let maxPending = 10_000
    private var due = false
    private var commitScheduled = false
    private var committing = false
    private var intervalTimer: (any Cancellable)?
    /// The last checkpoint stored: where a restart after a failure starts.
    private var lastStored: PipelineCheckpoint?
    /// The checkpoint read at the start.
    private var previous: PipelineCheckpoint?
    private var sequence: UInt64 = 0
    private var backoff = NamedPipeline.restartBackoff
    private var restartTimer: (any Cancellable)?

    /// A value written `into` a subject, waiting for its commit.
    private struct Output {
        let subject: HubSubject
        let value: Value
        let sender: String?
    }

    /// Where one source with history is.
    private final class SourceCursor {
        let subject: String
        var epoch: String
        var offset: UInt64

        init(subject: String, epoch: String, offset: UInt64) {
            self.subject = subject
            self.epoch = epoch
            self.offset = offset
        }
    }

    /// A runner of `pipeline` in `hub`, checkpointing into `store` by `policy`.
    init(pipeline: NamedPipeline, hub: Hub, store: any SubjectStore, policy: CheckpointPolicy) {
        self.pipeline = pipeline
        self.hub = hub
        self.store = store
        self.policy = policy
        textHash = PipelineCheckpoint.hash(of: pipeline.source)
    }

    private var metadata: Logger.Metadata { ["pipeline": "\(pipeline.name)"] }

    // MARK: Starting

    /// Reads the pipeline's last checkpoint and starts it from there (see the type).
    func start() {
        let generation = self.generation
        store.loadCheckpoint(pipeline: pipeline.name) { [weak self] result in
            guard let self, !self.stopped, generation == self.generation else { return }
            switch result {
            case let .success(stored):
                var checkpoint: PipelineCheckpoint?
                if let stored {
                    do throws(HubError) {
                        checkpoint = try PipelineCheckpoint(value: stored)
                    } catch {
                        self.logger.error(
                            "running pipeline's checkpoint cannot be read: starting afresh",
                            metadata: self.metadata.merging(["error": "\(error.message)", "restartFrom": "\(self.policy.restartFrom.rawValue)"]) { $1 })
                        self.run(fresh: self.policy.restartFrom)
                        return
                    }
                }
                self.begin(with: checkpoint)
            case let .failure(error):
                // Starting without it would overwrite it: try again later.
                self.logger.error(
                    "running pipeline's checkpoint could not be read; trying again", metadata: self.metadata.merging(["error": "\(error.message)"]) { $1 })
                self.retryLater { $0.start() }
            }
        }
    }

    private func begin(with checkpoint: PipelineCheckpoint?) {
        guard let checkpoint else {
            logger.info("running pipeline has no checkpoint yet: it starts from its sources' next values", metadata: metadata)
            run(fresh: .latest)
            return
        }
        previous = checkpoint
        lastStored = checkpoint
        sequence = checkpoint.sequence
        if checkpoint.textHash == textHash {
            logger.info(
                "running pipeline resumes from its checkpoint",
                metadata: metadata.merging(["sequence": "\(checkpoint.sequence)", "consumed": "\(checkpoint.consumed)"]) { $1 })
            run(from: checkpoint, changedText: false)
            return
        }
        let reason: String
        switch policy.restartFrom {
        case .checkpoint: reason = "its text changed since its checkpoint: it resumes from it anyway, keeping the state of the operators that did not change"
        case .beginning:
            reason = "its text changed since its checkpoint: it starts afresh from the oldest values its sources keep, "
                + "writing nothing until it has passed the values its checkpoint had consumed"
        case .latest: reason = "its text changed since its checkpoint: it starts afresh from its sources' next values"
        }
        logger.notice(
            "running pipeline starts afresh", metadata: metadata.merging(["reason": "\(reason)", "restartFrom": "\(policy.restartFrom.rawValue)"]) { $1 })
        if policy.restartFrom == .checkpoint {
            run(from: checkpoint, changedText: true)
        } else {
            run(fresh: policy.restartFrom)
        }
    }

    private func run(from checkpoint: PipelineCheckpoint, changedText: Bool) {
        resumeAt = checkpoint.sources
        fromBeginning = false
        consumed = checkpoint.consumed
        guard launch(restoring: checkpoint.operators) else { return }
        let failures = registry.failures
        guard failures.isEmpty else {
            let list = failures.map(\.description).joined(separator: "; ")
            if changedText {
                // Chosen by the configuration: the operators that changed start afresh.
                logger.warning("running pipeline's operators that changed start afresh", metadata: metadata.merging(["states": "\(list)"]) { $1 })
                gate.open()
                return
            }
            let restartFrom = policy.restartFrom == .checkpoint ? CheckpointPolicy.RestartPosition.beginning : policy.restartFrom
            logger.error(
                "running pipeline's checkpoint cannot be restored: it starts afresh",
                metadata: metadata.merging(["states": "\(list)", "restartFrom": "\(restartFrom.rawValue)"]) { $1 })
            cancelInstance()
            run(fresh: restartFrom)
            return
        }
        gate.open()
    }

    private func run(fresh position: CheckpointPolicy.RestartPosition) {
        resumeAt = [:]
        fromBeginning = position == .beginning
        quietUntil = fromBeginning ? previous?.sources ?? [:] : [:]
        consumed = 0
        guard launch(restoring: [:]) else { return }
        gate.open()
        // Where it started, stored at once: a crash before its first checkpoint with values
        // resumes from here rather than from the sources' next values again, which would
        // skip what it had consumed. (From the beginning, the previous checkpoint, or
        // none, already says where to start again.)
        if position == .latest { markDue() }
    }

    /// Compiles and subscribes a new instance restoring `states`; its sources wait for the gate.
    private func launch(restoring states: [String: Value]) -> Bool {
        generation += 1
        registry = CheckpointRegistry(restoring: states)
        gate = SourceGate()
        cursors = [:]
        occurrences = [:]
        pending = []
        consumedSince = 0
        writtenSince = 0
        due = false
        building = true
        defer { building = false }
        let publisher: AnyPublisher<Value, HubError>
        do throws(HubError) {
            publisher = try pipeline.compileForRunner(self, in: hub)
        } catch {
            logger.error("running pipeline did not start", metadata: metadata.merging(["error": "\(error.message)"]) { $1 })
            return false
        }
        let generation = self.generation
        var ended = false
        let cancellable = publisher.sink(
            receiveCompletion: { [weak self] completion in
                ended = true
                self?.ended(completion, generation: generation)
            },
            receiveValue: { _ in })
        if !ended { subscription = cancellable }
        return !ended
    }

    private func cancelInstance() {
        generation += 1
        subscription.take()?.cancel()
        intervalTimer.take()?.cancel()
        pending = []
    }

    // MARK: Sources and sinks (the pipeline's environment)

    /// The publisher of `subject` (which keeps history) as a source of the instance being
    /// built, from its checkpointed offset; `nil` when the runner does not track this use
    /// (a source built later, inside a nested pipeline: it is consumed live).
    func source(for subject: HubSubject, bufferSize: Int?, overflow: OverflowPolicy?) -> AnyPublisher<Value, HubError>? {
        guard building, registry.isTopLevel, let history = subject.history else { return nil }
        let use = occurrences[subject.name, default: 0] + 1
        occurrences[subject.name] = use
        let key = use == 1 ? subject.name : "\(subject.name)#\(use)"
        let since: HistorySince?
        if let position = resumeAt[key], position.subject == subject.name {
            since = .offset(position.offset, epoch: position.epoch)
        } else if fromBeginning {
            // A table from the beginning is its snapshot, then its changes.
            since = subject.table == nil ? .last(.max) : nil
        } else {
            since = nil
        }
        let cursor = SourceCursor(subject: subject.name, epoch: history.epoch, offset: history.lastOffset)
        cursors[key] = cursor
        let hub = self.hub
        let generation = self.generation
        let name = pipeline.name
        let logger = self.logger
        return gate.gated { () -> AnyPublisher<Value, HubError> in
            do throws(HubError) {
                let replay = try hub.historyPublisher(
                    for: subject, since: since, bufferSize: bufferSize, overflow: overflow, lenient: true
                ) { position, recovered in
                    cursor.epoch = position.epoch
                    switch since {
                    case nil:
                        cursor.offset = position.offset
                    case let .offset(offset, epoch)?:
                        if recovered == false {
                            let lost = epoch != position.epoch ? "its history's epoch changed" : "values after offset \(offset) are no longer kept"
                            logger.warning(
                                "running pipeline's source cannot be replayed from its checkpoint: \(lost)",
                                metadata: ["pipeline": "\(name)", "source": "\(key)", "offset": "\(offset)"])
                        }
                        cursor.offset = recovered == false && epoch != position.epoch ? position.offset : offset
                    case .last?:
                        cursor.offset = 0
                    }
                }
                return replay.map { [weak self] entry -> Value in
                    if let self, generation == self.generation { self.consumed(entry.offset, by: cursor) }
                    return entry.value
                }.eraseToAnyPublisher()
            } catch {
                return Fail(error: error).eraseToAnyPublisher()
            }
        }
    }

    /// `value`, written into `subject`, waits for the next commit (unless the pipeline is
    /// rebuilding its state quietly: see ``quietUntil``).
    func write(_ value: Value, to subject: HubSubject, sender: String?) {
        if !quietUntil.isEmpty {
            if isQuiet { return }
            quietUntil = [:]
        }
        pending.append(Output(subject: subject, value: value, sender: sender))
        writtenSince += 1
        activity()
    }

    /// Whether every source that an earlier checkpoint had consumed is still within what it had.
    private var isQuiet: Bool {
        var within = false
        for (key, position) in quietUntil {
            guard let cursor = cursors[key], cursor.subject == position.subject, cursor.epoch == position.epoch else { continue }
            if cursor.offset > position.offset { return false }
            within = true
        }
        return within
    }

    private func consumed(_ offset: UInt64, by cursor: SourceCursor) {
        cursor.offset = offset
        consumed += 1
        consumedSince += 1
        activity()
    }

    // MARK: Commits

    /// Something was consumed or written: a checkpoint becomes due by count, or by time.
    private func activity() {
        if let every = policy.every, Swift.max(consumedSince, writtenSince) >= every {
            markDue()
        } else if pending.count >= Self.maxPending {
            markDue()
        } else if intervalTimer == nil, let interval = policy.interval {
            let scheduler = hub.scheduler
            intervalTimer = scheduler.schedule(after: scheduler.now.advanced(by: interval)) { [weak self] in
                guard let self else { return }
                self.intervalTimer = nil
                self.markDue()
            }
        }
    }

    private func markDue() {
        due = true
        guard !commitScheduled else { return }
        commitScheduled = true
        // At the end of the pass: everything this pass consumed goes into one checkpoint.
        hub.scheduler.schedule { [weak self] in
            guard let self else { return }
            self.commitScheduled = false
            if self.due, !self.committing, !self.stopped { self.commit() }
        }
    }

    /// Takes a checkpoint now and commits it with the values waiting.
    private func commit() {
        due = false
        consumedSince = 0
        writtenSince = 0
        intervalTimer.take()?.cancel()
        let checkpoint = snapshot()
        let outputs = pending
        pending = []
        // Values into the store's own subjects go in its transaction; the others once it is stored.
        let inTransaction = outputs.filter { isStored(with: $0.subject) }
        let afterwards = outputs.filter { !isStored(with: $0.subject) }
        committing = true
        let generation = self.generation
        let hub = self.hub
        store.commit(checkpoint: checkpoint.value, pipeline: pipeline.name, appending: {
            for output in inTransaction { hub.publish(output.value, to: output.subject, sender: output.sender) }
        }, completion: { [weak self] result in
            // Stored: the values into other subjects go out, whatever became of the runner since.
            if case .success = result {
                for output in afterwards { hub.publish(output.value, to: output.subject, sender: output.sender) }
            }
            guard let self else { return }
            self.committing = false
            guard generation == self.generation, !self.stopped else { return }
            switch result {
            case .success:
                self.lastStored = checkpoint
                self.sequence = checkpoint.sequence
                self.backoff = NamedPipeline.restartBackoff
                if self.due { self.markDue() }
            case let .failure(error):
                if error.data?["reason"] == "fenced" {
                    self.logger.warning(
                        "running pipeline stopped here: another node took it over", metadata: self.metadata.merging(["error": "\(error.message)"]) { $1 })
                    self.stop(commit: false)
                    return
                }
                self.logger.error(
                    "running pipeline's checkpoint was not stored: it restarts from the last one stored",
                    metadata: self.metadata.merging(["error": "\(error.message)"]) { $1 })
                self.restartFromLastStored()
            }
        })
    }

    /// The checkpoint of the running instance now.
    private func snapshot() -> PipelineCheckpoint {
        var sources: [String: PipelineCheckpoint.SourcePosition] = [:]
        for (key, cursor) in cursors {
            sources[key] = PipelineCheckpoint.SourcePosition(subject: cursor.subject, epoch: cursor.epoch, offset: cursor.offset)
        }
        return PipelineCheckpoint(
            textHash: textHash, sequence: sequence + 1, consumed: consumed, time: hub.wallClock().nanoseconds, sources: sources,
            operators: registry.snapshot())
    }

    /// Whether `subject`'s values are stored by the checkpoint's store (its durable subjects).
    private func isStored(with subject: HubSubject) -> Bool {
        guard let history = subject.history, history.isDurable, let durable = hub.durableStore else { return false }
        return durable === store
    }

    // MARK: Ending

    private func ended(_ completion: Subscribers.Completion<HubError>, generation: Int) {
        guard generation == self.generation, !stopped else { return }
        subscription = nil
        switch completion {
        case .finished:
            logger.notice("running pipeline finished", metadata: metadata)
            commit()
            stopped = true
            pipeline.runnerEnded()
        case .failure(let error):
            guard pipeline.failurePolicy == .restart else {
                logger.error("running pipeline stopped", metadata: metadata.merging(["error": "\(error.message)"]) { $1 })
                pipeline.runnerEnded()
                return
            }
            restartFromLastStored()
        }
    }

    /// Starts again from the last checkpoint stored (or afresh without one), after a back-off.
    private func restartFromLastStored() {
        cancelInstance()
        retryLater { runner in
            if let checkpoint = runner.lastStored {
                runner.run(from: checkpoint, changedText: checkpoint.textHash != runner.textHash)
            } else {
                runner.start()
            }
        }
    }

    private func retryLater(_ action: @escaping (PipelineRunner) -> Void) {
        let scheduler = hub.scheduler
        let wait = backoff
        backoff = Swift.min(backoff * 2, NamedPipeline.maximumRestartBackoff)
        restartTimer = scheduler.schedule(after: scheduler.now.advanced(by: wait)) { [weak self] in
            guard let self, !self.stopped else { return }
            self.restartTimer = nil
            action(self)
        }
    }

    /// Stops the pipeline: with `commit`, its state and the values waiting are committed
    /// first (a graceful stop); without, they are dropped (another node runs it now).
    func stop(commit: Bool) {
        guard !stopped else { return }
        if commit, subscription != nil { self.commit() }
        stopped = true
        restartTimer.take()?.cancel()
        intervalTimer.take()?.cancel()
        subscription.take()?.cancel()
        pending = []
        pipeline.runnerEnded()
    }
}
