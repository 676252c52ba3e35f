import HeapModule
import HubEngine
import HubValue
import HubWire
import HubPipeline
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Declaring subjects, triggers and named pipelines (from configuration), and creating names on first use.
extension Hub {
    /// Declares a subject (from configuration). A name already in use is refused. With a
    /// `schema`, every value sent to it must match (an initial value too: else `invalid_value`).
    /// With `history` it keeps that much of its history, in ``historyStore``; `durable`
    /// keeps it in ``durableStore`` instead (with `history`, or the default retention),
    /// so that it survives restarts.
    ///
    /// With `table` it is a table subject (``SubjectTable``) bounded by it: it always keeps a
    /// history (`history`, or the default retention), its changelog, and takes no initial value.
    @discardableResult
    public func declareSubject(
        _ name: String, initialValue: Value? = nil, bufferSize: Int? = nil, overflow: OverflowPolicy? = nil,
        schema: JSONSchema? = nil, history: HistoryRetention? = nil, durable: Bool = false,
        table: SubjectTable.Limits? = nil
    ) throws(HubError) -> HubSubject {
        let subject = try createSubject(
            name, initialValue: initialValue, bufferSize: bufferSize, overflow: overflow, schema: schema,
            history: history, durable: durable, table: table)
        subject.isDeclared = true
        return subject
    }

    /// Makes and registers a subject (declared, or created on first use).
    func createSubject(
        _ name: String, initialValue: Value? = nil, bufferSize: Int? = nil, overflow: OverflowPolicy? = nil,
        schema: JSONSchema? = nil, history: HistoryRetention? = nil, durable: Bool = false,
        table: SubjectTable.Limits? = nil
    ) throws(HubError) -> HubSubject {
        try Hub.check(name)
        guard entries[name] == nil else {
            throw HubError(.badMessage, "'\(name)' is already declared as a \(entries[name]!.kindName)")
        }
        if let schema, let initialValue, let problem = schema.validate(initialValue) {
            throw Hub.refusal(problem, subject: name, what: "initial value")
        }
        if table != nil, initialValue != nil {
            throw HubError(.badMessage, "table '\(name)' takes no initial value (its snapshot is its keys)")
        }
        let subject: HubSubject
        if durable || history != nil || table != nil {
            var retention = history ?? HistoryRetention()
            retention.keepsLatestPerKey = table != nil
            let store = try store(durable: durable, for: name)
            subject = HubSubject(
                name: name, initialValue: initialValue,
                bufferSize: bufferSize ?? configuration.defaultBufferSize,
                overflow: overflow ?? configuration.defaultOverflow, schema: schema,
                log: try store.openLog(subject: name, retention: retention),
                retention: retention, isDurable: durable, table: table)
        } else {
            subject = HubSubject(
                name: name, initialValue: initialValue,
                bufferSize: bufferSize ?? configuration.defaultBufferSize,
                overflow: overflow ?? configuration.defaultOverflow, schema: schema)
        }
        // System subjects count apart: they are the broker's, not the clients'.
        if !HubName.isSystem(name) { subject.counters = metrics.counters(for: name, kind: "subject") }
        entries[name] = .subject(subject)
        // A current-value subject declared while in a cluster (a reload) is listened to at once.
        if subject.kind == .currentValue, !HubName.isSystem(name), let clusterLink {
            clusterLink.hub(self, interestMayHaveChangedIn: name)
        }
        return subject
    }

    /// Declares a trigger (from configuration): it stays until the configuration drops
    /// it. A name already in use is refused.
    @discardableResult
    public func declareTrigger(_ name: String) throws(HubError) -> HubTrigger {
        if case .trigger(let existing) = entries[name], !existing.isDeclared {
            existing.isDeclared = true  // created on first use, now in the configuration: it stays
            return existing
        }
        let trigger = try createTrigger(name)
        trigger.isDeclared = true
        return trigger
    }

    func createTrigger(_ name: String) throws(HubError) -> HubTrigger {
        try Hub.check(name)
        guard entries[name] == nil else {
            throw HubError(.badMessage, "'\(name)' is already declared as a \(entries[name]!.kindName)")
        }
        let trigger = HubTrigger(name: name)
        trigger.counters = metrics.counters(for: name, kind: "trigger")
        entries[name] = .trigger(trigger)
        return trigger
    }

    /// Declares a named pipeline (from configuration): its text is parsed and
    /// checked against the limits now, compiled when subscribed (see
    /// ``NamedPipeline`` for shared and per-subscriber pipelines). A name
    /// already in use is refused; text that does not parse is `pipeline_error`.
    /// `currentValue` (shared pipelines only, else `bad_message`): a
    /// subscriber joining the open connection first receives its latest value.
    /// `onError`: what a value that makes it fail does; `runs`: the hub runs it from
    /// ``startRunningPipelines()`` on, without subscribers; `locate`: where a position of
    /// its text is in its configuration file (for errors and logs).
    @discardableResult
    public func declarePipeline(
        _ name: String, source: String, shared: Bool = true, bufferSize: Int? = nil, overflow: OverflowPolicy? = nil,
        currentValue: Bool = false, onError: PipelineFailurePolicy = .fail, runs: Bool = false,
        checkpoint: CheckpointPolicy? = nil, locate: (@Sendable (_ line: Int, _ column: Int) -> String?)? = nil
    ) throws(HubError) -> NamedPipeline {
        try Hub.check(name)
        guard entries[name] == nil else {
            throw HubError(.badMessage, "'\(name)' is already declared as a \(entries[name]!.kindName)")
        }
        if let bufferSize { _ = try bufferCapacity(bufferSize) }
        guard shared || !currentValue else {
            throw HubError(.badMessage, "pipeline '\(name)': currentValue needs a shared pipeline")
        }
        _ = try PipelineCompiler.parse(source, limits: limits)
        let pipeline = NamedPipeline(name: name, source: source, shared: shared, bufferSize: bufferSize, overflow: overflow,
                                     currentValue: currentValue, onError: onError, runs: runs, checkpoint: checkpoint,
                                     locate: locate)
        pipeline.counters = metrics.counters(for: name, kind: "pipeline")
        entries[name] = .pipeline(pipeline)
        return pipeline
    }

    /// Starts every declared pipeline that runs without subscribers (`runs`), in name order.
    public func startRunningPipelines() throws(HubError) {
        for (_, entry) in allEntries {
            if case .pipeline(let pipeline) = entry, pipeline.runs, pipelinePlacement?(pipeline) ?? true {
                try pipeline.start(in: self)
            }
        }
    }

    /// Stops the running pipelines (the broker is stopping).
    public func stopRunningPipelines() {
        for (_, entry) in allEntries {
            if case .pipeline(let pipeline) = entry { pipeline.stop() }
        }
    }
}
