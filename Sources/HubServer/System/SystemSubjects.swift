import HubEngine
import HubRegistry
import HubValue
import HubWire

/// The system subjects a service publishes (PROTOCOL.md §3, "System subjects"),
/// subscribable like any subject by clients with the `admin` permission:
///
/// - `$sys.stats` (current value, every ``interval``): the figures of ``MetricsSnapshot``
///   with rates per second and each name's counters, subscribers and state;
/// - `$sys.connections` (current value, same tick): the open connections (at most
///   ``connectionListLimit`` listed, `total` counts all), made only while someone
///   subscribes to it, and when someone does (listing every connection each second
///   beside 10,000 idle ones stalled the loop for milliseconds: the round trips' p99);
/// - `$sys.events` (passthrough): one value per connect, disconnect, auth failure,
///   protocol error, slow consumer, pipeline failure, drain and reload.
///
/// They are written straight into their subjects (not through `Hub.publish`), so that
/// the clients' figures do not count the broker's own values. Confined to the service's loop.
final class SystemSubjects {
    /// How many connections `$sys.connections` lists.
    static let connectionListLimit = 1000

    let interval: Duration
    private let hub: Hub
    private let stats: HubSubject
    private let connections: HubSubject
    private let events: HubSubject
    private var timer: (any Cancellable)?
    private var previous: (time: Int64, snapshot: MetricsSnapshot)?
    private let startedAt: Int64

    /// Declares the three subjects in `hub`.
    init(hub: Hub, interval: Duration) throws(HubError) {
        self.hub = hub
        self.interval = interval
        startedAt = Hub.systemWallClock().nanoseconds
        stats = try hub.declareSubject("$sys.stats", initialValue: .object([:]), bufferSize: 16, overflow: .latest)
        connections = try hub.declareSubject(
            "$sys.connections", initialValue: ["total": 0, "connections": []], bufferSize: 4, overflow: .latest)
        events = try hub.declareSubject("$sys.events", bufferSize: 1000, overflow: .dropOldest)
    }

    private var collect: (() -> (MetricsSnapshot, draining: Bool))?
    private var listConnections: (() -> [ConnectionFigures])?

    /// Publishes the figures every ``interval``, from `collect` and `connections`.
    func start(
        collect: @escaping () -> (MetricsSnapshot, draining: Bool), connections: @escaping () -> [ConnectionFigures]
    ) {
        guard timer == nil else { return }
        self.collect = collect
        listConnections = connections
        refresh(listingConnections: true)
        timer = hub.scheduler.schedule(after: hub.scheduler.now.advanced(by: interval), interval: interval) {
            [weak self] in self?.refresh()
        }
    }

    /// Publishes the figures now; the connections too when `listingConnections` (a client
    /// is subscribing to a system subject) or while `$sys.connections` has subscribers.
    func refresh(listingConnections: Bool = false) {
        guard let collect else { return }
        let (snapshot, draining) = collect()
        publish(snapshot, draining: draining)
        if listingConnections || connections.subscriberCount > 0, let listConnections {
            publish(listConnections())
        }
    }

    /// Stops publishing.
    func stop() {
        timer.take()?.cancel()
        collect = nil
        listConnections = nil
    }

    /// One open connection, for `$sys.connections`.
    struct ConnectionFigures {
        var session: String
        var peer: String?
        var client: String?
        var authenticated: Bool
        /// The identity it authenticated as (`anonymous` without auth), once it has.
        var identity: String?
        var since: Int64
        var subscriptions: Int
        var queuedBytes: Int
        var bytesIn: Int
        var bytesOut: Int
    }

    /// Publishes an event `{"type", "time", ...fields}` on `$sys.events`.
    func event(_ type: String, _ fields: Value.Object) {
        var value = fields
        value["type"] = .string(type)
        value["time"] = .int(Hub.systemWallClock().nanoseconds / 1_000_000)
        events.send(.object(value))
    }

    private func publish(_ snapshot: MetricsSnapshot, draining: Bool) {
        let now = Hub.systemWallClock().nanoseconds
        let seconds = previous.map { Double(now - $0.time) / 1e9 } ?? 0
        let before = previous?.snapshot
        func rate(_ now: Int, _ then: Int?) -> Value {
            guard let then, seconds > 0 else { return .double(0) }
            return .double((Double(now - then) / seconds * 10).rounded() / 10)
        }
        var names: [Value] = []
        for figures in snapshot.names.values.sorted(by: { $0.name < $1.name }) {
            var entry: Value.Object = [
                "name": .string(figures.name), "kind": .string(figures.kind),
                "published": .int(Int64(figures.published)), "delivered": .int(Int64(figures.delivered)),
                "dropped": .int(Int64(figures.dropped)), "overflows": .int(Int64(figures.overflows)),
                "publishedRate": rate(figures.published, before?.names[figures.name]?.published),
                "deliveredRate": rate(figures.delivered, before?.names[figures.name]?.delivered),
            ]
            if let hubEntry = hub.entry(named: figures.name) {
                entry["subscribers"] = .int(Int64(hubEntry.subscriberCount))
                if case .subject(let subject) = hubEntry {
                    entry["state"] = .string(subject.failure != nil ? "failed" : subject.isCompleted ? "completed" : "open")
                }
            }
            names.append(.object(entry))
        }
        let value: Value.Object = [
            "time": .int(now / 1_000_000),
            "uptime": .double((Double(now - startedAt) / 1e8).rounded() / 10),
            "interval": .double(Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18),
            "draining": .bool(draining),
            "connections": .int(Int64(snapshot.connections)),
            "subscriptions": .int(Int64(snapshot.subscriptions)),
            "queuedBytes": .int(Int64(snapshot.queuedBytes)),
            "loopLagMs": .double(Double(snapshot.loopLagMaximum.nanosecondsForMetrics / 1000) / 1000),
            "totals": [
                "published": .int(Int64(snapshot.published)), "activations": .int(Int64(snapshot.activations)),
                "delivered": .int(Int64(snapshot.delivered)), "dropped": .int(Int64(snapshot.dropped)),
                "overflows": .int(Int64(snapshot.overflows)), "bytesIn": .int(Int64(snapshot.bytesReceived)),
                "bytesOut": .int(Int64(snapshot.bytesSent)),
                "connectionsOpened": .int(Int64(snapshot.connectionsOpened)),
                "slowConsumerCloses": .int(Int64(snapshot.slowConsumerCloses)),
                "authFailures": .int(Int64(snapshot.authFailures)),
                "protocolErrors": .int(Int64(snapshot.protocolErrors)),
                "pipelineFailures": .int(Int64(snapshot.pipelineFailures)),
                "namedPipelineFailures": .int(Int64(snapshot.namedPipelineFailures)),
                "rateLimitCloses": .int(Int64(snapshot.rateLimitCloses)),
                "connectionRefusals": .int(Int64(snapshot.connectionRefusals)),
            ],
            "rates": [
                "published": rate(snapshot.published, before?.published),
                "delivered": rate(snapshot.delivered, before?.delivered),
                "bytesIn": rate(snapshot.bytesReceived, before?.bytesReceived),
                "bytesOut": rate(snapshot.bytesSent, before?.bytesSent),
            ],
            "names": .array(names),
        ]
        previous = (now, snapshot)
        stats.send(.object(value))
    }

    /// Publishes the open connections on `$sys.connections`, the oldest first.
    private func publish(_ open: [ConnectionFigures]) {
        let now = Hub.systemWallClock().nanoseconds
        let listed = open.sorted { $0.since < $1.since }.prefix(SystemSubjects.connectionListLimit).map { figures -> Value in
            .object([
                "session": .string(figures.session), "peer": figures.peer.map(Value.string) ?? .null,
                "client": figures.client.map(Value.string) ?? .null, "authenticated": .bool(figures.authenticated),
                "identity": figures.identity.map(Value.string) ?? .null,
                "since": .int(figures.since / 1_000_000), "subscriptions": .int(Int64(figures.subscriptions)),
                "queuedBytes": .int(Int64(figures.queuedBytes)), "bytesIn": .int(Int64(figures.bytesIn)),
                "bytesOut": .int(Int64(figures.bytesOut)),
            ])
        }
        connections.send(["time": .int(now / 1_000_000), "total": .int(Int64(open.count)), "connections": .array(listed)])
    }
}
