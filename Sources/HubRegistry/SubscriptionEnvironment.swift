import HubEngine
import HubPipeline
import HubValue
import HubWire

/// What one subscription's pipeline is compiled against: the hub, with the
/// subscription's buffer settings for every hot source it names, the budget its
/// connection spends, and the permissions of the client's identity.
///
/// ``Hub/compile(pipeline:bufferSize:overflow:budget:permissions:)`` makes one per
/// compilation and hands it to ``PipelineCompiler``; the pipeline keeps it for the
/// nested pipelines it builds later (`flatMap`, `switchToLatest`), so they get the same
/// settings, budget and permissions. Confined to the hub's event loop.
final class SubscriptionEnvironment: PipelineEnvironment {
    private let hub: Hub
    /// The buffer of each hot source.
    let bufferSize: Int
    /// The overflow policy of each hot source, or `nil` for each entry's own.
    let overflow: OverflowPolicy?
    /// The named pipeline being compiled (its failure policy and logs), `nil` for pipeline text.
    let pipeline: NamedPipeline?
    /// What the pipeline spends (its connection's budget), if bounded.
    let budget: ResourceBudget?
    /// The client's permissions; `nil`: everything is allowed.
    let permissions: Permissions?

    /// How deeply named pipelines were called with an argument to compile this one.
    let depth: Int
    /// The runner of a checkpointed running pipeline: its sources with history, its
    /// `into` and its operators' states go through it.
    let runner: PipelineRunner?

    init(
        hub: Hub, bufferSize: Int, overflow: OverflowPolicy?, budget: ResourceBudget?, permissions: Permissions?,
        pipeline: NamedPipeline? = nil, depth: Int = 0, runner: PipelineRunner? = nil
    ) {
        self.runner = runner
        self.hub = hub
        self.bufferSize = bufferSize
        self.overflow = overflow
        self.budget = budget
        self.permissions = permissions
        self.pipeline = pipeline
        self.depth = depth
    }

    func kind(ofName name: String) -> String? { hub.entry(named: name)?.kindName }

    func isPipeline(named name: String) -> Bool {
        if case .pipeline? = hub.entry(named: name) { return true }
        return false
    }

    /// `name(argument)`: a new instance of the named pipeline, compiled with this
    /// subscription's buffers, budget and permissions, one level deeper.
    func call(pipeline name: String, with argument: Value) throws(HubError) -> AnyPublisher<Value, HubError> {
        try authorize(.subscribe, name: name)
        guard case .pipeline(let called)? = hub.entry(named: name) else {
            throw HubError(.notFound, "no pipeline named '\(name)'")
        }
        guard depth < hub.limits.maxCallDepth else {
            throw HubError(
                .limitExceeded,
                "pipeline '\(name)' called \(depth + 1) levels deep: the limit is \(hub.limits.maxCallDepth) (limits.pipelines.maxCallDepth)",
                data: ["limit": .int(Int64(hub.limits.maxCallDepth))])
        }
        // Each level nests synchronously (its subscription, and every value through it):
        // a bound set higher than the thread's stack allows ends the same way, never in a crash.
        guard StackSpace.allowsNesting() else {
            throw HubError(
                .limitExceeded,
                "pipeline '\(name)' called \(depth + 1) levels deep: too little stack is left for another level (lower limits.pipelines.maxCallDepth)",
                data: ["limit": "stack"])
        }
        return try called.instance(
            in: hub, argument: argument, bufferSize: bufferSize, overflow: overflow, budget: budget,
            permissions: permissions, depth: depth + 1)
    }

    /// `into(name)` and `handleEvents(into: name)`: the subject (created when the hub
    /// auto-creates names), if the pipeline may publish into it; each value is checked
    /// against its schema and published with the sender of the value that caused it.
    func sink(named name: String) throws(HubError) -> (Value) throws(HubError) -> Void {
        try authorize(.publish, name: name)
        let subject = try hub.subject(named: name)
        let hub = self.hub
        let runner = self.runner
        return { value throws(HubError) in
            guard !subject.isCompleted else { throw HubError(.completed, "subject '\(name)' has completed") }
            if let schema = subject.schema, let problem = schema.validate(value) {
                throw Hub.refusal(problem, subject: name, what: "value")
            }
            if let table = subject.table { _ = try table.validate(value) }
            // A checkpointed pipeline's values wait for its next checkpoint, committed with it.
            if let runner {
                runner.write(value, to: subject, sender: hub.origin.sender)
            } else {
                hub.publish(value, to: subject, sender: hub.origin.sender)
            }
        }
    }

    /// Skips failing values when the named pipeline says so (`onError: skip`), logging each.
    var skipFailure: ((HubError) -> Void)? {
        guard let pipeline, pipeline.failurePolicy == .skip else { return nil }
        return { [weak hub, weak pipeline] error in
            guard let hub, let pipeline else { return }
            pipeline.skipped(error, in: hub)
        }
    }

    /// Logs a failed `handleEvents` tap.
    func ignoredFailure(_ error: HubError) {
        if let pipeline {
            pipeline.tapFailed(error, in: hub)
        } else {
            hub.logger.warning("pipeline tap failed (ignored)", metadata: ["error": "\(error.message)"])
        }
    }

    func source(named name: String) throws(HubError) -> AnyPublisher<Value, HubError> {
        try authorize(.subscribe, name: name)
        // A checkpointed pipeline reads a subject with history from its checkpointed offset.
        if let runner, case .subject(let subject) = try hub.resolve(name),
           let replay = runner.source(for: subject, bufferSize: bufferSize, overflow: overflow) {
            return replay
        }
        return try hub.source(named: name, bufferSize: bufferSize, overflow: overflow, memory: budget)
    }

    /// The running pipeline's checkpoints, when it is checkpointed.
    var checkpoints: CheckpointRegistry? { runner?.registry }

    func trigger(named name: String, key: Value?) throws(HubError) -> AnyPublisher<Value, HubError> {
        try authorize(.subscribe, name: name)
        return try hub.trigger(named: name, key: key, bufferSize: bufferSize, overflow: overflow, memory: budget)
    }

    /// Ad-hoc pipeline text may read a name its identity may both subscribe to and read
    /// in pipelines; writing needs `publish`, activating `trigger`.
    func authorize(_ access: PipelineAccess, name: String) throws(HubError) {
        guard let permissions else { return }
        switch access {
        case .subscribe:
            try permissions.check(.subscribe, name, doing: "read")
            try permissions.check(.pipelines, name, doing: "read in a pipeline")
        case .publish:
            try permissions.check(.publish, name, doing: "publish into")
        case .trigger:
            try permissions.check(.trigger, name, doing: "activate")
        }
    }

    var scheduler: any Scheduler { hub.scheduler }
    var limits: PipelineLimits { hub.limits }
    var wallClock: () -> SchedulerTime { hub.wallClock }
}
