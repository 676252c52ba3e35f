import HubEngine
import HubValue
import HubWire

/// What a compiled pipeline may reach outside itself: the hub's named sources
/// and triggers, a scheduler for its timing operators, and the limits that keep
/// a shared broker safe.
///
/// The hub implements it; tests can implement it with plain subjects. Every
/// method is called on the hub's event loop while compiling.
///
/// Every name a pipeline reads goes through ``source(named:)`` or
/// ``trigger(named:key:)`` and every name it writes through ``sink(named:)``,
/// when the stage that uses it is built (at compile time, or per value inside
/// `flatMap`/`switchToLatest` for computed names): the place for a hub to check
/// what the pipeline's client may read and write, and to refuse with its error.
public protocol PipelineEnvironment: AnyObject {
    /// The publisher of a bare name used as a source: a subject, a named
    /// pipeline or a trigger (which emits each activation's key, or `null`).
    /// Throws `not_found` (or creates the subject when the hub auto-creates names).
    func source(named name: String) throws(HubError) -> AnyPublisher<Value, HubError>

    /// The publisher of `trigger(name)` (every activation, emitting its key or
    /// `null`) or `trigger(name, key)` (only activations whose key equals `key`).
    /// Creates the trigger when the hub auto-creates names.
    func trigger(named name: String, key: Value?) throws(HubError) -> AnyPublisher<Value, HubError>

    /// The scheduler of timing operators (`timer`, `debounce`, `delay`, ...).
    var scheduler: any Scheduler { get }

    /// The limits pipelines are compiled under.
    var limits: PipelineLimits { get }

    /// The clock of `now()`, as nanoseconds since the Unix epoch on a real hub
    /// (a calendar time, unlike ``scheduler``'s monotonic one). The default is
    /// the scheduler's clock, which keeps tests in virtual time.
    var wallClock: () -> SchedulerTime { get }

    /// The subject `name` as the target of `into(name)` and `handleEvents(into: name, ...)`:
    /// a function that publishes one value into it, throwing what a `send` would
    /// (`invalid_value` when the subject's schema refuses the value, `completed` once it
    /// has finished). Resolving may create the subject (when the hub auto-creates names)
    /// or refuse the name (`not_found`, `forbidden`). The default refuses every name.
    func sink(named name: String) throws(HubError) -> (Value) throws(HubError) -> Void

    /// When not `nil`, the pipeline skips a value on which one of its expressions fails
    /// (or that its `into` target refuses) instead of failing: the failure is handed to
    /// this function (a named pipeline with `onError: skip` logs it). The default is `nil`.
    var skipFailure: ((HubError) -> Void)? { get }

    /// A side effect that failed and that the pipeline ignores (a `handleEvents` tap whose
    /// expression fails or whose value its subject refuses). The default does nothing.
    func ignoredFailure(_ error: HubError)

    /// What the pipelines compiled here may spend (evaluation steps per second, memory
    /// held, timers), on behalf of their subscription, connection and identity; `nil`: only
    /// the per-evaluation step limit and the ``limits`` apply.
    var budget: ResourceBudget? { get }

    /// Throws `forbidden` unless the pipeline's identity may use `name` for `access`.
    /// The compiler calls it for every name written in the text before anything runs, and
    /// the sources call it again when they open a name computed at run time
    /// (`subject(expr)`, `trigger(expr)`). A stage that writes into a subject (`into`)
    /// asks for ``PipelineAccess/publish``.
    func authorize(_ access: PipelineAccess, name: String) throws(HubError)

    /// Whether `name` is a named pipeline, which a pipeline may call with an argument
    /// (`page(.next)`) as a source. The default is `false`.
    func isPipeline(named name: String) -> Bool

    /// What `name` is in the hub ("subject", "trigger", "pipeline"), for messages, or `nil`
    /// when it is none of them (or the environment does not say). The default is `nil`.
    func kind(ofName name: String) -> String?

    /// `name(argument)` as a source: a new instance of the named pipeline `name` with `.`
    /// bound to `argument` in its top-level arguments, as `flatMap` binds it in the
    /// pipelines it builds. It may call itself (a recursive paginated publisher), at most
    /// ``PipelineLimits/maxCallDepth`` deep. The default refuses.
    func call(pipeline name: String, with argument: Value) throws(HubError) -> AnyPublisher<Value, HubError>

    /// Where the stateful operators of the pipeline keep their state for checkpoints (a
    /// running pipeline's, see ``HubEngine/CheckpointRegistry``): each one gets a slot
    /// under the path of its stage in the text when it is built. `nil` (the default): the
    /// pipeline is not checkpointed.
    var checkpoints: CheckpointRegistry? { get }
}

extension PipelineEnvironment {
    /// The scheduler's clock.
    public var wallClock: () -> SchedulerTime {
        let scheduler = self.scheduler
        return { scheduler.now }
    }

    /// Refuses every name: this environment cannot write.
    public func sink(named name: String) throws(HubError) -> (Value) throws(HubError) -> Void {
        throw HubError(.forbidden, "pipelines cannot write into '\(name)' here")
    }

    /// Failures fail the pipeline.
    public var skipFailure: ((HubError) -> Void)? { nil }

    /// Ignored.
    public func ignoredFailure(_ error: HubError) {}

    /// No budget.
    public var budget: ResourceBudget? { nil }

    /// Everything is allowed.
    public func authorize(_ access: PipelineAccess, name: String) throws(HubError) {}

    /// No named pipelines.
    public func isPipeline(named name: String) -> Bool { false }

    /// Not said.
    public func kind(ofName name: String) -> String? { nil }

    /// Not checkpointed.
    public var checkpoints: CheckpointRegistry? { nil }

    /// Refused: no named pipelines.
    public func call(pipeline name: String, with argument: Value) throws(HubError) -> AnyPublisher<Value, HubError> {
        throw HubError(.notFound, "no pipeline named '\(name)'")
    }
}

/// What a pipeline does with a name, for ``PipelineEnvironment/authorize(_:name:)``.
public enum PipelineAccess: String, Hashable, Sendable, CaseIterable {
    /// Reads it: a subject, a named pipeline or a trigger used as a source.
    case subscribe
    /// Writes values, completion or failure into it (a subject).
    case publish
    /// Activates it (a trigger).
    case trigger
}

/// Bounds on what one pipeline may contain, so that a shared broker stays safe.
public struct PipelineLimits: Hashable, Sendable {
    /// The longest accepted source text, in UTF-8 bytes.
    public var maxSourceLength: Int
    /// The most stages in one pipeline, nested pipelines included.
    public var maxStages: Int
    /// The deepest expression nesting.
    public var maxExpressionDepth: Int
    /// The shortest interval of `timer`, `debounce`, `throttle`, `delay`.
    public var minimumInterval: Duration
    /// The deepest nesting of a value built inside a pipeline (an expression's result, an
    /// accumulator, a collected array): the JSON reader's limit by default, so that every
    /// value a pipeline delivers can be read back, and every recursive walk over a value
    /// (writing, comparing, hashing, freeing) stays far from the end of the stack.
    public var maxValueDepth: Int
    /// The largest value built inside a pipeline, in estimated bytes
    /// (``HubValue/Value/estimatedBytes``, counting shared parts each time they appear).
    public var maxValueBytes: Int
    /// The deepest nesting of named pipelines called with an argument (`page(.next)` inside
    /// `page`): the most pages a recursive paginated pipeline loads.
    public var maxCallDepth: Int

    /// Limits with the defaults of a shared broker.
    public init(
        maxSourceLength: Int = 16 * 1024,
        maxStages: Int = 64,
        maxExpressionDepth: Int = 32,
        minimumInterval: Duration = .milliseconds(10),
        maxValueDepth: Int = Value.defaultMaxDepth,
        maxValueBytes: Int = 16 << 20,
        maxCallDepth: Int = 100
    ) {
        self.maxSourceLength = maxSourceLength
        self.maxStages = maxStages
        self.maxExpressionDepth = maxExpressionDepth
        self.minimumInterval = minimumInterval
        self.maxValueDepth = maxValueDepth
        self.maxValueBytes = maxValueBytes
        self.maxCallDepth = maxCallDepth
    }
}
