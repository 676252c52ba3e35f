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

/// The hub: the registry of named subjects, triggers and pipelines, and the
/// operations of the protocol on them.
///
/// A hub and everything it holds are confined to one thread (the event loop);
/// sessions call it there. Names share one namespace. With
/// ``Configuration/autoCreate`` (the default), unknown names are created on
/// first use: a passthrough subject for `send`/`complete`/`fail`/`subscribe`,
/// a trigger for `trigger`. Named pipelines are only declared
/// (``declarePipeline(_:source:shared:bufferSize:overflow:currentValue:)``), never created.
public final class Hub: PipelineEnvironment {
    /// How a hub behaves where the protocol leaves a choice.
    public struct Configuration: Sendable {
        /// Whether unknown names are created on first use.
        public var autoCreate: Bool
        /// The buffer size of a hot subscription that asks for none.
        public var defaultBufferSize: Int
        /// The largest buffer a subscription may ask for.
        public var maxBufferSize: Int
        /// The overflow policy of a hot subscription that asks for none.
        public var defaultOverflow: OverflowPolicy
        /// The limits pipelines are compiled under.
        public var limits: PipelineLimits
        /// How many names get their own counters in the metrics (``HubMetrics``); later
        /// names share one.
        public var metricsNameCapacity: Int = 200
        /// The history of subjects created on first use (configuration `defaults.history`);
        /// `nil`: they keep none.
        public var defaultHistory: HistoryRetention?
        /// How long a subject created on first use may stay unused (no subscriber, nothing
        /// sent or resolved by name) before the hub forgets it (``sweepIdleNames()``, run
        /// by the service every `idleNameTimeout`: a name goes after between one and two
        /// of them); `nil`: never. Declared subjects, triggers and pipelines stay.
        public var idleNameTimeout: Duration? = .seconds(600)

        /// The defaults of PROTOCOL.md.
        public init(
            autoCreate: Bool = true,
            defaultBufferSize: Int = 1000,
            maxBufferSize: Int = 100_000,
            defaultOverflow: OverflowPolicy = .error,
            limits: PipelineLimits = PipelineLimits()
        ) {
            self.autoCreate = autoCreate
            self.defaultBufferSize = defaultBufferSize
            self.maxBufferSize = maxBufferSize
            self.defaultOverflow = defaultOverflow
            self.limits = limits
        }
    }

    /// What a name stands for.
    public enum Entry {
        /// A subject.
        case subject(HubSubject)
        /// A trigger.
        case trigger(HubTrigger)
        /// A named pipeline.
        case pipeline(NamedPipeline)

        /// "subject", "trigger" or "pipeline", for messages.
        public var kindName: String {
            switch self {
            case .subject: return "subject"
            case .trigger: return "trigger"
            case .pipeline: return "pipeline"
            }
        }

        /// The name's counters for the metrics.
        public var counters: NameCounters {
            switch self {
            case .subject(let subject): return subject.counters
            case .trigger(let trigger): return trigger.counters
            case .pipeline(let pipeline): return pipeline.counters
            }
        }

        /// The number of live subscribers of the subject, trigger or pipeline.
        public var subscriberCount: Int {
            switch self {
            case .subject(let subject): return subject.subscriberCount
            case .trigger(let trigger): return trigger.subscriberCount
            case .pipeline(let pipeline): return pipeline.subscriberCount
            }
        }
    }

    /// The hub's configuration (``reconfigure(_:)`` changes it while running).
    public private(set) var configuration: Configuration
    /// Counters of published, delivered, dropped and overflowed values, in total and per name.
    public let metrics: HubMetrics
    /// The scheduler of timing operators: the event loop's, or a test scheduler.
    public let scheduler: any Scheduler

    private var entries: [String: Entry] = [:]

    /// The clock of `now()` in pipelines: nanoseconds since the Unix epoch.
    public let wallClock: () -> SchedulerTime
    /// Where refused values and named pipelines' failures, skips and restarts are logged.
    public let logger: Logger
    /// The sender of the value being handled (see ``ValueOrigin``).
    public let origin = ValueOrigin()
    /// Told of each failure of a named pipeline (its name, the sender of the value that
    /// failed it if any, the error placed in the configuration file), after it is logged
    /// and counted: the broker publishes it on `$sys.events`. Called on the hub's loop.
    public var onNamedPipelineFailure: ((_ pipeline: String, _ sender: String?, _ error: HubError) -> Void)?

    /// Where subjects that are not durable keep their history (the process's memory; in a
    /// cluster, JetStream: set before the subjects are declared).
    public var historyStore: any SubjectStore
    /// Where durable subjects keep theirs (the service sets the SQLite store of
    /// `storage.path`); `nil`: no subject may be durable.
    public var durableStore: (any SubjectStore)?

    /// The cluster this hub belongs to, if any: told of local sends, completions, deletions,
    /// activations and changes of interest, and asked for the cluster's catalog.
    public weak var clusterLink: (any HubClusterLink)?
    /// The subject or trigger whose event from another node the hub is applying, if any:
    /// what happens to that name meanwhile is not told to the link (it came from there).
    public private(set) var clusterEventName: String?
    /// Whether the hub is applying an event that came from another node.
    public var isApplyingClusterEvent: Bool { clusterEventName != nil }
    /// Whether this hub runs a running pipeline (`runs`) now; `nil`: it runs them all. A
    /// cluster places each on one node, and starts and stops it as the place moves.
    public var pipelinePlacement: ((NamedPipeline) -> Bool)?

    /// An empty hub. `wallClock` is the clock of `now()` in pipelines: the
    /// system's calendar time unless given (tests pass virtual time).
    public init(
        configuration: Configuration = Configuration(), scheduler: any Scheduler,
        wallClock: (() -> SchedulerTime)? = nil, logger: Logger = Logger(label: "hub"),
        historyStore: (any SubjectStore)? = nil, durableStore: (any SubjectStore)? = nil
    ) {
        self.configuration = configuration
        self.scheduler = scheduler
        self.historyStore = historyStore ?? MemoryStore()
        self.durableStore = durableStore
        metrics = HubMetrics(nameCapacity: configuration.metricsNameCapacity)
        self.wallClock = wallClock ?? Hub.systemWallClock
        self.logger = logger
    }

    /// The system's calendar time, as nanoseconds since the Unix epoch.
    public static func systemWallClock() -> SchedulerTime {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return SchedulerTime(nanoseconds: Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec))
    }

    /// The limits pipelines are compiled under.
    public var limits: PipelineLimits { configuration.limits }

    /// Applies a new configuration (a reload): auto-creation, buffer defaults and bounds,
    /// and pipeline limits apply to what is created, subscribed or compiled from now on;
    /// live subscriptions keep what they were made with. The metrics' name capacity is
    /// fixed at start.
    public func reconfigure(_ configuration: Configuration) {
        var configuration = configuration
        configuration.metricsNameCapacity = self.configuration.metricsNameCapacity
        self.configuration = configuration
    }

    /// Removes the named pipeline `name` from the registry (a reload that drops or
    /// changes it): live subscriptions keep their pipeline; new ones get `not_found`, or
    /// the pipeline declared in its place. Returns whether there was one.
    @discardableResult
    public func removePipeline(named name: String) -> Bool {
        guard case .pipeline(let pipeline) = entries[name] else { return false }
        // A running pipeline stops with it (its subscribers keep the old instance).
        pipeline.stop()
        entries[name] = nil
        return true
    }

    /// What `name` stands for, if anything.
    public func entry(named name: String) -> Entry? { entries[name] }

    /// Every name and what it stands for, sorted by name.
    public var allEntries: [(name: String, entry: Entry)] {
        entries.sorted { $0.key < $1.key }.map { (name: $0.key, entry: $0.value) }
    }

    // MARK: Declaring

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
    private func createSubject(
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

    private func createTrigger(_ name: String) throws(HubError) -> HubTrigger {
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

    // MARK: Resolving

    /// The subject `name`, created if unknown and the hub auto-creates names.
    public func subject(named name: String) throws(HubError) -> HubSubject {
        try Hub.check(name)
        switch entries[name] {
        case .subject(let subject):
            subject.wasUsed = true
            return subject
        case .some(let other):
            throw HubError(.notFound, "'\(name)' is a \(other.kindName), not a subject")
        case nil:
            guard configuration.autoCreate, !HubName.isSystem(name) else {
                throw HubError(.notFound, "no subject named '\(name)'")
            }
            return try createSubject(name, history: configuration.defaultHistory)
        }
    }

    /// The trigger `name`, created if unknown and the hub auto-creates names.
    public func trigger(named name: String) throws(HubError) -> HubTrigger {
        try Hub.check(name)
        switch entries[name] {
        case .trigger(let trigger):
            trigger.wasUsed = true
            return trigger
        case .some(let other):
            throw HubError(.notFound, "'\(name)' is a \(other.kindName), not a trigger")
        case nil:
            guard configuration.autoCreate, !HubName.isSystem(name) else {
                throw HubError(.notFound, "no trigger named '\(name)'")
            }
            let trigger = try createTrigger(name)
            trigger.wasUsed = true
            return trigger
        }
    }

    // MARK: Operations

    /// The subject `name` if it is still open: `completed` once it has finished.
    public func openSubject(named name: String) throws(HubError) -> HubSubject {
        let subject = try subject(named: name)
        guard !subject.isCompleted else { throw HubError(.completed, "subject '\(name)' has completed") }
        return subject
    }

    /// Publishes `value` into the subject `to`, after checking it against the subject's
    /// schema (`invalid_value`, logged with `sender`, when it does not match).
    public func send(_ value: Value, to name: String, sender: String? = nil) throws(HubError) {
        let subject = try openSubject(named: name)
        try validate(value, for: subject, sender: sender)
        publish(value, to: subject, sender: sender)
    }

    /// Throws `invalid_value` (and logs it with `sender`) when `subject` has a schema that
    /// `value` does not match: the message and `data` say where in the value and why.
    /// A table subject also refuses a value that is not a change (`invalid_value`) and one
    /// it has no room for (`limit_exceeded`).
    public func validate(_ value: Value, for subject: HubSubject, sender: String?) throws(HubError) {
        if let table = subject.table { _ = try table.validate(value) }
        guard let schema = subject.schema, let problem = schema.validate(value) else { return }
        let error = Hub.refusal(problem, subject: subject.name, what: "value")
        logger.warning("value refused by the subject's schema", metadata: [
            "subject": "\(subject.name)", "sender": "\(sender ?? "unknown")", "path": "\(problem.path)",
            "error": "\(problem.message)",
        ])
        throw error
    }

    static func refusal(_ problem: JSONSchema.ValidationError, subject: String, what: String) -> HubError {
        HubError(
            .invalidValue, "subject '\(subject)' refuses the \(what): \(problem.path): \(problem.message)",
            data: [
                "path": .string(problem.path), "keyword": .string(problem.keyword),
                "schemaPath": .string(problem.schemaPath), "error": .string(problem.message),
            ])
    }

    /// Publishes `value` into `subject` (resolved with ``openSubject(named:)`` and checked with
    /// ``validate(_:for:sender:)``); `sender` is the value's ``origin`` while it propagates.
    /// A subject with history stores it first (see the next method).
    public func publish(_ value: Value, to subject: HubSubject, sender: String? = nil) {
        publish(value, to: subject, sender: sender, whenStored: nil)
    }

    /// Publishes `value` into `subject`; `whenStored` runs before the subscribers get
    /// it: at once without history (with `nil`), else once it is stored (with its offset)
    /// or could not be (with the store's error, and the value goes nowhere). This is
    /// how a `send` with `ack` is acknowledged only once its value is stored.
    public func publish(
        _ value: Value, to subject: HubSubject, sender: String? = nil,
        whenStored: ((Result<UInt64?, HubError>) -> Void)?
    ) {
        var subject = subject
        if subject.isRemoved {
            // Forgotten as idle while its holder (a pipeline's `into`) was quiet: the
            // value goes to the subject of that name now, created anew if need be.
            guard let live = try? self.subject(named: subject.name) else { return }
            subject = live
        }
        subject.wasUsed = true
        metrics.published += 1
        subject.counters.published &+= 1
        if let clusterLink, subject.name != clusterEventName, subject.history == nil, !HubName.isSystem(subject.name) {
            clusterLink.hub(self, published: value, to: subject)
        }
        var whenStored = whenStored
        if whenStored == nil, subject.table != nil {
            // A table may refuse a value that was checked before it was published (a running
            // pipeline's outputs wait for its checkpoint, other changes may fill the table
            // meanwhile): no sender hears of it, the log does.
            let (logger, name) = (self.logger, subject.name)
            whenStored = { result in
                guard case let .failure(error) = result else { return }
                logger.warning("table refused a change", metadata: [
                    "subject": "\(name)", "sender": "\(sender ?? "unknown")", "error": "\(error.message)",
                ])
            }
        }
        let previous = origin.sender
        origin.sender = sender
        subject.send(value, whenStored: whenStored)
        origin.sender = previous
    }

    /// The store a subject's history goes to: the durable one, or the memory one.
    private func store(durable: Bool, for name: String) throws(HubError) -> any SubjectStore {
        guard durable else { return historyStore }
        guard let durableStore else {
            throw HubError(.badMessage, "subject '\(name)' is durable, but the hub has no durable store (storage.path)")
        }
        return durableStore
    }

    /// Forgets the subjects and triggers created on first use (not declared, not system
    /// subjects) that have no subscriber and were not used since the previous sweep; the others are
    /// marked unused until their next use. Returns how many were forgotten. The service
    /// calls it every ``Configuration/idleNameTimeout``, so that names a client invents
    /// (100,000 unique `send`s, `subject("ns" + string(.))`) do not stay forever. A
    /// forgotten subject loses nothing a subscriber could see (a passthrough subject keeps
    /// no value) except a completion: the next use of the name starts it afresh. A
    /// forgotten trigger had no subscriber to see an activation.
    @discardableResult
    public func sweepIdleNames() -> Int {
        var forgotten = 0
        for (name, entry) in entries where !HubName.isSystem(name) {
            switch entry {
            case .subject(let subject) where !subject.isDeclared:
                if subject.wasUsed || subject.subscriberCount > 0 {
                    subject.wasUsed = false
                    continue
                }
                entries[name] = nil
                subject.isRemoved = true
                forgotten += 1
            case .trigger(let trigger) where !trigger.isDeclared:
                if trigger.wasUsed || trigger.subscriberCount > 0 {
                    trigger.wasUsed = false
                    continue
                }
                entries[name] = nil
                forgotten += 1
            default:
                continue
            }
        }
        return forgotten
    }

    /// Deletes the subject `name` so that it can start over (a completed or failed subject
    /// takes no more values until then): its live subscribers get `complete` (after their
    /// buffered values), and a declared subject is replaced by a fresh one with the same
    /// settings (its initial value again); one created on first use is removed (the next
    /// use creates it anew). A trigger's or pipeline's name is `not_found`; a system
    /// subject is `forbidden`.
    public func delete(_ name: String) throws(HubError) {
        try Hub.check(name)
        if HubName.isSystem(name) { throw HubError(.forbidden, "the system subject '\(name)' cannot be deleted") }
        switch entries[name] {
        case .subject(let subject):
            entries[name] = nil
            if !subject.isCompleted { subject.send(completion: .finished) }
            // Its history goes too: the next subject of that name begins a new epoch. A
            // delete made on another node of a cluster removed the shared history there:
            // this node lets go of its log.
            if let history = subject.history {
                let store = try store(durable: history.isDurable, for: name)
                if name == clusterEventName {
                    try store.forgetLog(subject: name)
                } else {
                    try store.removeLog(subject: name)
                }
            }
            if let clusterLink, name != clusterEventName { clusterLink.hub(self, deleted: subject) }
            if subject.isDeclared {
                let fresh = try createSubject(
                    name, initialValue: subject.initialValue, bufferSize: subject.bufferSize, overflow: subject.overflow,
                    schema: subject.schema, history: subject.history?.retention, durable: subject.history?.isDurable ?? false,
                    table: subject.table?.limits)
                fresh.isDeclared = true
            }
        case .some(let other):
            throw HubError(.notFound, "'\(name)' is a \(other.kindName), not a subject")
        case nil:
            throw HubError(.notFound, "no subject named '\(name)'")
        }
    }

    /// Finishes the subject `name`: its subscribers get `complete` after their buffered values.
    public func complete(_ name: String) throws(HubError) {
        finish(try openSubject(named: name), error: nil)
    }

    /// Fails the subject `name` with the JSON value `error`.
    public func fail(_ name: String, error: Value) throws(HubError) {
        finish(try openSubject(named: name), error: error)
    }

    /// Completes `subject` (`error` nil) or fails it with `error`, and tells the cluster.
    public func finish(_ subject: HubSubject, error: Value?) {
        if let clusterLink, subject.name != clusterEventName, !HubName.isSystem(subject.name) {
            clusterLink.hub(self, finished: subject, error: error)
        }
        if let error { subject.fail(with: error) } else { subject.send(completion: .finished) }
    }

    /// Runs `body` as the application of an event from another node of the cluster to the
    /// subject or trigger `name`: what it publishes into, completes, deletes or activates
    /// of `name` is not sent back to the cluster. (What it causes elsewhere, such as a
    /// pipeline's `into` another subject, is this node's doing and is sent.)
    public func applyingClusterEvent<T>(to name: String, _ body: () throws -> T) rethrows -> T {
        let previous = clusterEventName
        clusterEventName = name
        defer { clusterEventName = previous }
        return try body()
    }

    /// Activates the trigger `name`, for `key` if given.
    public func activate(_ name: String, key: Value?) throws(HubError) {
        activate(try trigger(named: name), key: key)
    }

    /// Activates `trigger` (resolved with ``trigger(named:)``), for `key` if given.
    public func activate(_ trigger: HubTrigger, key: Value?) {
        if let clusterLink, trigger.name != clusterEventName { clusterLink.hub(self, activated: trigger, key: key) }
        metrics.activations += 1
        trigger.counters.published &+= 1
        trigger.activate(key: key)
    }

    /// The publisher a subscription `to: name` receives, buffered per the
    /// subscription's settings (or the subject's), and what kind of entry it is.
    ///
    /// With a `memory` budget, the subscription's buffer is also bounded by the bytes
    /// that budget allows (the subscriber's connection's).
    public func publisher(
        for name: String, bufferSize: Int? = nil, overflow: OverflowPolicy? = nil, memory: ResourceBudget? = nil
    ) throws(HubError) -> (entry: Entry, publisher: AnyPublisher<Value, HubError>) {
        let entry = try resolve(name)
        let size = try bufferCapacity(bufferSize ?? defaultBufferSize(of: entry))
        return (entry, try bufferedPublisher(entry, bufferSize: size, overflow: overflow, memory: memory))
    }

    /// Compiles `source` for one subscription whose hot sources get `bufferSize` and `overflow`.
    /// A source longer than ``PipelineLimits/maxSourceLength`` is `limit_exceeded`
    /// (PROTOCOL.md §6: pipeline size is a server limit, not a compile error).
    ///
    /// `budget` is what the pipeline spends (steps, memory, timers: its connection's);
    /// `permissions`, those of the client's identity: every name the text reads must be
    /// allowed for `subscribe` and `pipelines` (checked before anything runs, and again
    /// when a name computed at run time is opened), else `forbidden`. The compiled
    /// pipeline is counted in `budget`'s memory while it lives.
    public func compile(
        pipeline source: String, bufferSize: Int? = nil, overflow: OverflowPolicy? = nil,
        budget: ResourceBudget? = nil, permissions: Permissions? = nil
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        try compile(pipeline: source, bufferSize: bufferSize, overflow: overflow, budget: budget, permissions: permissions, named: nil)
    }

    /// Compiles `source`, the text of `named` when it is a named pipeline's (whose failure
    /// policy and logs its environment follows); `outer` is `.` in its top-level arguments
    /// and `depth` how deeply named pipelines were called to get here (`page(.next)`).
    func compile(
        pipeline source: String, bufferSize: Int?, overflow: OverflowPolicy?, budget: ResourceBudget?,
        permissions: Permissions?, named: NamedPipeline?, outer: Value = .null, depth: Int = 0, runner: PipelineRunner? = nil
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        let length = source.utf8.count
        guard length <= limits.maxSourceLength else {
            throw HubError(
                .limitExceeded,
                "pipeline text is \(length) bytes, more than the limit of \(limits.maxSourceLength)",
                data: ["limit": .int(Int64(limits.maxSourceLength))])
        }
        let size = try bufferCapacity(bufferSize ?? configuration.defaultBufferSize)
        // The subscription's buffer settings travel with the environment the pipeline is
        // compiled against (and that its nested pipelines compile against later).
        let environment = SubscriptionEnvironment(
            hub: self, bufferSize: size, overflow: overflow, budget: budget, permissions: permissions, pipeline: named,
            depth: depth, runner: runner)
        guard let budget else { return try PipelineCompiler.compile(source, environment: environment, outer: outer) }
        // The compiled text (its syntax, constants and closures) is held while the pipeline lives.
        let lease = try budget.lease(bytes: length * PipelineCompiler.compiledBytesPerSourceByte, for: "pipeline")
        let compiled = try PipelineCompiler.compile(source, environment: environment, outer: outer)
        return compiled
            .handleEvents(receiveCompletion: { _ in lease.release() }, receiveCancel: { lease.release() })
            .eraseToAnyPublisher()
    }

    // MARK: PipelineEnvironment

    /// A bare name in a pipeline: the subject (created if the hub auto-creates names) or
    /// trigger of that name, hot-buffered with the entry's default settings (a
    /// subscription's own settings come through ``compile(pipeline:bufferSize:overflow:)``).
    public func source(named name: String) throws(HubError) -> AnyPublisher<Value, HubError> {
        try source(named: name, bufferSize: nil, overflow: nil)
    }

    /// `trigger(name[, key])` in a pipeline: the trigger's activations (those with an equal
    /// key when `key` is given), hot-buffered with the default settings.
    public func trigger(named name: String, key: Value?) throws(HubError) -> AnyPublisher<Value, HubError> {
        try trigger(named: name, key: key, bufferSize: nil, overflow: nil, memory: nil)
    }

    /// A bare name's publisher, hot-buffered with `bufferSize` and `overflow` (or the entry's defaults).
    func source(
        named name: String, bufferSize: Int?, overflow: OverflowPolicy?, memory: ResourceBudget? = nil
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        try bufferedPublisher(try resolve(name), bufferSize: bufferSize, overflow: overflow, memory: memory, origin: origin)
    }

    /// A trigger's publisher, hot-buffered with `bufferSize` and `overflow` (or the defaults).
    func trigger(
        named name: String, key: Value?, bufferSize: Int?, overflow: OverflowPolicy?, memory: ResourceBudget? = nil
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        triggerPublisher(
            try trigger(named: name), key: key, bufferSize: bufferSize, overflow: overflow, memory: memory, origin: origin)
    }

    /// A subscription to a subject with history (PROTOCOL.md §10): its values with their
    /// offsets from `since` (see ``Publishers/HistoryReplay``), hot-buffered live with
    /// `bufferSize` and `overflow` (or the subject's) and bounded by `memory`, reads paced
    /// by `pacer`; `onStart` hears the epoch, latest offset and, with `since`, whether it
    /// was recovered.
    ///
    /// A table subject gives its snapshot first, then its changes (``Publishers/TableReplay``;
    /// `lenient` does not apply: a `since` whose changes are gone gives the snapshot again).
    public func historyPublisher(
        for subject: HubSubject, since: HistorySince?, bufferSize: Int? = nil, overflow: OverflowPolicy? = nil,
        memory: ResourceBudget? = nil, pacer: (any ReplayPacer)? = nil, lenient: Bool = false,
        onStart: @escaping (HistoryPosition, Bool?) -> Void
    ) throws(HubError) -> AnyPublisher<HistoryEntry, HubError> {
        guard let history = subject.history else {
            throw HubError(.internal, "subject '\(subject.name)' keeps no history")
        }
        // In a cluster the node follows the subject's stream from now on (the cluster
        // reviews its interest again at its catalog interval, once the replay has ended).
        if let clusterLink, !HubName.isSystem(subject.name) { clusterLink.hub(self, interestMayHaveChangedIn: subject.name) }
        let capacity = try bufferCapacity(bufferSize ?? subject.bufferSize)
        let (metrics, policy) = (self.metrics, subject.overflowPolicy(asked: overflow))
        let replay = { (since: HistorySince?, lenient: Bool, onStart: @escaping (HistoryPosition, Bool?) -> Void) in
            Publishers.HistoryReplay(
                history: history, since: since, capacity: capacity, policy: policy, metrics: metrics,
                counters: subject.counters, memory: memory, pacer: pacer, congestion: subject.congestion,
                lenient: lenient, onStart: onStart)
        }
        guard let table = subject.table else { return replay(since, lenient, onStart).eraseToAnyPublisher() }
        return Publishers.TableReplay(
            table: table, history: history, since: since, memory: memory,
            // A changelog compacted per key has gaps the table's replay goes over.
            changes: { since, onStart in replay(since, history.log.compactsPerKey, onStart) },
            onStart: onStart
        ).eraseToAnyPublisher()
    }

    /// The current value of `key` in the table subject `name`, with the offset of the change
    /// that set it, or `nil` when the table has no such key: `not_found` for a name that is
    /// not a table subject.
    public func lookup(_ key: Value, inTable name: String) throws(HubError) -> HistoryEntry? {
        guard case .subject(let subject)? = entries[name], let table = subject.table else {
            if let entry = entries[name] {
                throw HubError(.notFound, "'\(name)' is a \(entry.kindName), not a table subject")
            }
            throw HubError(.notFound, "no table subject named '\(name)'")
        }
        subject.wasUsed = true
        switch TableChange.parse(["key": key, "value": .null]) {
        case let .success(change): return table.lookup(change.key)
        case let .failure(refusal):
            throw HubError(.badMessage, "table '\(name)': \(refusal.message)")
        }
    }

    /// What `name` stands for; an unknown name becomes a subject when the hub auto-creates names.
    public func resolve(_ name: String) throws(HubError) -> Entry {
        try Hub.check(name)
        if let entry = entries[name] { return entry }
        return .subject(try subject(named: name))
    }

    /// The buffer size a subscription to `entry` gets when it asks for none.
    private func defaultBufferSize(of entry: Entry) -> Int {
        switch entry {
        case .subject(let subject): return subject.bufferSize
        case .trigger: return configuration.defaultBufferSize
        case .pipeline(let pipeline): return pipeline.bufferSize ?? configuration.defaultBufferSize
        }
    }

    /// `entry`'s publisher for one subscription, hot-buffered with `bufferSize` and
    /// `overflow`, or with the entry's own settings (then the hub's) where they are `nil`.
    /// A pipeline's hot sources pass the hub's `origin`, so that the sender of a buffered value
    /// is known again when it is delivered.
    private func bufferedPublisher(
        _ entry: Entry, bufferSize: Int?, overflow: OverflowPolicy?, memory: ResourceBudget?, origin: ValueOrigin? = nil
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        let size = bufferSize ?? defaultBufferSize(of: entry)
        switch entry {
        case .subject(let subject) where subject.table != nil:
            // A table read by a pipeline (`lookup(positions, …)`): its snapshot, then its changes.
            return try historyPublisher(
                for: subject, since: nil, bufferSize: size, overflow: overflow, memory: memory, onStart: { _, _ in }
            ).map(\.value).eraseToAnyPublisher()
        case .subject(let subject):
            return watchingInterest(in: subject.name, subject.publisher)
                .hotBuffer(
                    capacity: size, policy: subject.overflowPolicy(asked: overflow), metrics: metrics, counters: subject.counters,
                    memory: memory, origin: origin, congestion: subject.congestion)
                .eraseToAnyPublisher()
        case .trigger(let trigger):
            return triggerPublisher(trigger, key: nil, bufferSize: size, overflow: overflow, memory: memory, origin: origin)
        case .pipeline(let pipeline):
            return try pipeline.publisher(
                in: self, bufferSize: size, overflow: overflow ?? pipeline.overflow ?? configuration.defaultOverflow,
                memory: memory)
        }
    }

    private func triggerPublisher(
        _ trigger: HubTrigger, key: Value?, bufferSize: Int?, overflow: OverflowPolicy?, memory: ResourceBudget?,
        origin: ValueOrigin? = nil
    ) -> AnyPublisher<Value, HubError> {
        watchingInterest(in: trigger.name, trigger.publisher(key: key))
            .hotBuffer(
                capacity: bufferSize ?? configuration.defaultBufferSize,
                policy: overflow ?? configuration.defaultOverflow, metrics: metrics, counters: trigger.counters,
                memory: memory, origin: origin)
            .eraseToAnyPublisher()
    }

    /// `publisher`, telling the cluster link (when there is one) when a subscription to
    /// `name` begins and ends, so that the node listens to the name's values from other
    /// nodes only while it has subscribers of its own.
    private func watchingInterest(
        in name: String, _ publisher: AnyPublisher<Value, HubError>
    ) -> AnyPublisher<Value, HubError> {
        guard clusterLink != nil, !HubName.isSystem(name) else { return publisher }
        let changed: () -> Void = { [weak self] in
            guard let self, let link = self.clusterLink else { return }
            link.hub(self, interestMayHaveChangedIn: name)
        }
        return publisher
            .handleEvents(
                receiveSubscription: { _ in changed() }, receiveCompletion: { _ in changed() },
                receiveCancel: { changed() })
            .eraseToAnyPublisher()
    }

    // MARK: Checks

    private func bufferCapacity(_ size: Int) throws(HubError) -> Int {
        guard size >= 1, size <= configuration.maxBufferSize else {
            throw HubError(.badMessage, "buffer must be between 1 and \(configuration.maxBufferSize), got \(size)")
        }
        return size
    }

    /// Throws `bad_message` unless `name` is a valid hub name.
    static func check(_ name: String) throws(HubError) {
        guard HubName.isValid(name) else {
            throw HubError(.badMessage, "invalid name '\(name)': names match [A-Za-z_][A-Za-z0-9_.]* and have at most \(HubName.maxLength) bytes")
        }
    }
}

extension Hub {
    /// The whole catalog: every subject, pipeline and trigger with its subscriber count
    /// (the system subjects are left out: PROTOCOL.md documents them).
    public func catalog() -> Catalog {
        let local = localCatalog()
        return clusterLink?.clusterCatalog(merging: local) ?? local
    }

    /// This hub's own catalog (in a cluster, ``catalog()`` adds the other nodes').
    public func localCatalog() -> Catalog {
        var catalog = Catalog()
        for (name, entry) in entries where !HubName.isSystem(name) {
            Hub.append(name, entry, to: &catalog)
        }
        return catalog.sorted()
    }

    /// One page of the catalog `list` answers: the entries after `after` in catalog order
    /// (``CatalogCursor``) that `isVisible` lets through, at most `limit` of them and about
    /// `maxBytes` of JSON (at least one entry), with ``Catalog/next`` set when more follow.
    /// Alone, it costs one pass over the names and a heap of `limit` entries, whatever the
    /// catalog's size.
    public func catalog(
        after: CatalogCursor?, limit: Int, maxBytes: Int, isVisible: (String) -> Bool = { _ in true }
    ) -> Catalog {
        if let clusterLink {
            // The cluster's catalog is assembled from every node's: page it in memory.
            return clusterLink.clusterCatalog(merging: localCatalog())
                .page(after: after, limit: limit, maxBytes: maxBytes, isVisible: isVisible)
        }
        let limit = max(1, limit)
        var page = Heap<CatalogCursor>()
        var more = false
        for (name, entry) in entries where !HubName.isSystem(name) {
            let cursor = CatalogCursor(Hub.cursorKind(of: entry), name)
            if let after, cursor <= after { continue }
            guard isVisible(name) else { continue }
            if page.count < limit {
                page.insert(cursor)
            } else if let last = page.max, cursor < last {
                page.replaceMax(with: cursor)
                more = true
            } else {
                more = true
            }
        }
        // The chosen entries, cut to the page's bytes by the rule every catalog is paged by.
        var chosen = Catalog()
        for cursor in page.unordered.sorted() {
            if let entry = entries[cursor.name] { Hub.append(cursor.name, entry, to: &chosen) }
        }
        return chosen.page(after: nil, limit: limit, maxBytes: maxBytes, moreFollow: more)
    }

    private static func cursorKind(of entry: Entry) -> CatalogCursor.Kind {
        switch entry {
        case .subject: .subject
        case .pipeline: .pipeline
        case .trigger: .trigger
        }
    }

    private static func append(_ name: String, _ entry: Entry, to catalog: inout Catalog) {
        switch entry {
        case .subject(let subject):
            let state: Catalog.SubjectEntry.State =
                subject.failure != nil ? .failed : subject.isCompleted ? .completed : .open
            catalog.subjects.append(Catalog.SubjectEntry(
                name: name, kind: subject.kind == .passthrough ? .passthrough : .currentValue,
                value: subject.currentValue, subscribers: subject.subscriberCount, state: state))
        case .trigger(let trigger):
            catalog.triggers.append(Catalog.TriggerEntry(name: name, subscribers: trigger.subscriberCount))
        case .pipeline(let pipeline):
            catalog.pipelines.append(Catalog.PipelineEntry(name: name, subscribers: pipeline.subscriberCount))
        }
    }
}
