/// The figures of one event loop at one moment: what `/metrics` exports and what
/// `$sys.stats` publishes. Each loop takes its own (no lock: it reads its own
/// counters); the collector merges them.
public struct MetricsSnapshot: Sendable, Equatable {
    /// The counters of one name (subject, trigger, pipeline, or a shared bucket).
    public struct NameFigures: Sendable, Equatable {
        /// The name, or `$other` / `$adhoc`.
        public var name: String
        /// `subject`, `trigger`, `pipeline`, or `shared` for the buckets.
        public var kind: String
        /// Values published into it.
        public var published = 0
        /// Values delivered to its subscriptions.
        public var delivered = 0
        /// Values its subscriptions' buffers dropped.
        public var dropped = 0
        /// Subscriptions ended by an overflow.
        public var overflows = 0

        mutating func add(_ other: NameFigures) {
            published += other.published
            delivered += other.delivered
            dropped += other.dropped
            overflows += other.overflows
        }
    }

    /// Open connections.
    public var connections = 0
    /// Connections opened since start.
    public var connectionsOpened = 0
    /// Live subscriptions.
    public var subscriptions = 0
    /// Bytes queued for the connections and not yet handed to their sockets.
    public var queuedBytes = 0
    /// Bytes received since start (message payloads).
    public var bytesReceived = 0
    /// Bytes sent since start (frames).
    public var bytesSent = 0
    /// Connections closed as slow consumers (4008).
    public var slowConsumerCloses = 0
    /// Connections refused as unauthorized (4401).
    public var authFailures = 0
    /// Protocol errors answered.
    public var protocolErrors = 0
    /// Pipeline subscriptions that failed.
    public var pipelineFailures = 0
    /// Failures of named pipelines (once per failure, running ones included).
    public var namedPipelineFailures = 0
    /// Connections closed for their rate (4429).
    public var rateLimitCloses = 0
    /// Connections refused at a connection limit (4429).
    public var connectionRefusals = 0
    /// Values published into subjects.
    public var published = 0
    /// Trigger activations.
    public var activations = 0
    /// Values delivered to subscriptions.
    public var delivered = 0
    /// Values dropped by buffers.
    public var dropped = 0
    /// Subscriptions ended by an overflow.
    public var overflows = 0
    /// Names in the hub by kind (`subject`, `trigger`, `pipeline`).
    public var namesByKind: [String: Int] = [:]
    /// Open sessions on each event loop, the hub's first.
    public var loopSessions: [Int] = []
    /// The largest lag of each connection loop (loops 1, 2, …) since the previous `/metrics`.
    public var connectionLoopLagMaximum: [Duration] = []
    /// The most CPU time one service pass of each event loop (the hub's first) took
    /// since the previous `/metrics`; empty unless the loops measure it
    /// (``HubService/Configuration/measuresPassCPUTime``).
    public var loopPassCPUMaximum: [Duration] = []
    /// The largest event-loop lag since the previous snapshot.
    public var loopLagMaximum: Duration = .zero
    /// The event-loop lag samples since the previous snapshot.
    public var loopLagSamples: [Duration] = []
    /// The per-name counters, by name.
    public var names: [String: NameFigures] = [:]

    /// An empty snapshot.
    public init() {}

    /// Adds `other` (another loop's) to this one.
    public mutating func merge(_ other: MetricsSnapshot) {
        connections += other.connections
        connectionsOpened += other.connectionsOpened
        subscriptions += other.subscriptions
        queuedBytes += other.queuedBytes
        bytesReceived += other.bytesReceived
        bytesSent += other.bytesSent
        slowConsumerCloses += other.slowConsumerCloses
        authFailures += other.authFailures
        protocolErrors += other.protocolErrors
        pipelineFailures += other.pipelineFailures
        namedPipelineFailures += other.namedPipelineFailures
        rateLimitCloses += other.rateLimitCloses
        connectionRefusals += other.connectionRefusals
        published += other.published
        activations += other.activations
        delivered += other.delivered
        dropped += other.dropped
        overflows += other.overflows
        namesByKind.merge(other.namesByKind, uniquingKeysWith: +)
        loopLagMaximum = max(loopLagMaximum, other.loopLagMaximum)
        loopLagSamples += other.loopLagSamples
        for (name, figures) in other.names {
            names[name, default: NameFigures(name: name, kind: figures.kind)].add(figures)
        }
    }
}
