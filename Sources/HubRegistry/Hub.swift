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

    var entries: [String: Entry] = [:]

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
    public internal(set) var clusterEventName: String?
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

    /// What `name` stands for; an unknown name becomes a subject when the hub auto-creates names.
    public func resolve(_ name: String) throws(HubError) -> Entry {
        try Hub.check(name)
        if let entry = entries[name] { return entry }
        return .subject(try subject(named: name))
    }

    /// Throws `bad_message` unless `name` is a valid hub name.
    static func check(_ name: String) throws(HubError) {
        guard HubName.isValid(name) else {
            throw HubError(.badMessage, "invalid name '\(name)': names match [A-Za-z_][A-Za-z0-9_.]* and have at most \(HubName.maxLength) bytes")
        }
    }
}
