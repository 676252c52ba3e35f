import HubEngine
import HubValue
import HubWire

/// What a compiled pipeline may reach outside itself: the hub's named sources
/// and triggers, a scheduler for its timing operators, and the limits that keep
/// a shared broker safe.
///
/// The hub implements it; tests can implement it with plain subjects. Every
/// method is called on the hub's event loop while compiling.
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
}

extension PipelineEnvironment {
    /// The scheduler's clock.
    public var wallClock: () -> SchedulerTime {
        let scheduler = self.scheduler
        return { scheduler.now }
    }
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

    /// Limits with the defaults of a shared broker.
    public init(
        maxSourceLength: Int = 16 * 1024,
        maxStages: Int = 64,
        maxExpressionDepth: Int = 32,
        minimumInterval: Duration = .milliseconds(10)
    ) {
        self.maxSourceLength = maxSourceLength
        self.maxStages = maxStages
        self.maxExpressionDepth = maxExpressionDepth
        self.minimumInterval = minimumInterval
    }
}
