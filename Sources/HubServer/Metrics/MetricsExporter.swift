import CoreMetrics
import Metrics
import Prometheus

/// Turns ``MetricsSnapshot``s into the Prometheus text format through swift-metrics
/// (`Counter`, `Gauge`, `Timer`) backed by a swift-prometheus registry of its own (one
/// per service, so that several services in one process keep their figures apart; the
/// global `MetricsSystem` is left to the application).
///
/// The hot path never touches it: the loops count in plain integers, and at each scrape
/// the exporter adds to each counter what the snapshot shows beyond what it exported
/// last time. Per-name series are bounded: the first ``labelCapacity`` names get a
/// `name` label of their own, later ones are added into `name="$other"` (as the loops'
/// own tables do), so a client that invents names cannot grow the output.
///
/// Confined to the loop that serves `/metrics`.
final class MetricsExporter {
    /// How many names get their own series.
    let labelCapacity: Int
    private let registry = PrometheusCollectorRegistry()
    private let factory: HubMetricsFactory
    private var counters: [String: (counter: CoreMetrics.Counter, exported: Int)] = [:]
    private var gauges: [String: CoreMetrics.Gauge] = [:]
    /// The names with series of their own, and the `kind` label each got first.
    private var labelled: [String: String] = [:]
    private let lag: Metrics.Timer

    /// The metric names and their help lines (README lists them).
    static let help: [String: String] = [
        "hub_connections": "Open WebSocket connections.",
        "hub_connections_opened_total": "WebSocket connections opened since the broker started.",
        "hub_subscriptions": "Live subscriptions over every connection.",
        "hub_queued_bytes": "Bytes queued for the connections and not yet handed to their sockets.",
        "hub_received_bytes_total": "Message payload bytes received from clients.",
        "hub_sent_bytes_total": "Bytes written to clients' sockets (frames included).",
        "hub_slow_consumer_closes_total": "Connections closed with 4008 because their client stopped reading.",
        "hub_auth_failures_total": "Connections refused with 4401 for a missing or wrong token.",
        "hub_protocol_errors_total": "Client messages answered with bad_message, unknown_op, duplicate_id or invalid_demand.",
        "hub_pipeline_failures_total": "Pipeline subscriptions that ended with failed (an evaluation error).",
        "hub_rate_limit_closes_total": "Connections closed with 4429 for sending more messages or bytes a second than allowed.",
        "hub_connection_refusals_total": "Connections refused with 4429 at the broker's or their identity's connection limit.",
        "hub_named_pipeline_failures_total":
            "Failures of named pipelines, once per failure however many clients share it (running pipelines and restarts included).",
        "hub_published_total": "Values published into a name (send, or a trigger's activations); names past the label limit are summed under name=\"$other\".",
        "hub_delivered_total": "Values delivered to the subscriptions to a name (ad-hoc pipelines: name=\"$adhoc\").",
        "hub_dropped_total": "Values dropped by the buffers of a name's subscriptions (dropOldest, dropNewest, latest).",
        "hub_overflows_total": "Subscriptions to a name ended by an overflow of their buffer.",
        "hub_names": "Names in the hub, by kind.",
        "hub_event_loop_sessions": "Open sessions whose connection each event loop serves (loop=\"0\": the hub's loop).",
        "hub_event_loop_lag_max_seconds": "The largest delay of the event loop's probe timer since the previous scrape.",
        "hub_event_loop_lag_seconds": "How late the event loop ran its probe timer (every 250 ms).",
        "hub_event_loop_pass_cpu_max_seconds":
            "The most CPU time one service pass of the event loop took since the previous scrape (with metrics.passCPU).",
        "hub_connection_loop_lag_max_seconds":
            "The largest delay of each connection loop's probe timer (every 250 ms) since the previous scrape (loop=\"1\" and up).",
    ]

    init(labelCapacity: Int) {
        self.labelCapacity = labelCapacity
        factory = HubMetricsFactory(
            registry: registry, help: MetricsExporter.help,
            durationBuckets: ["hub_event_loop_lag_seconds": [
                .microseconds(100), .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(50),
                .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5),
            ]])
        lag = Metrics.Timer(label: "hub_event_loop_lag_seconds", factory: factory)
    }

    /// Exports `snapshot` (cumulative figures) and `samples` (from sources outside the
    /// service) and renders every metric as Prometheus text.
    func render(_ snapshot: MetricsSnapshot, adding samples: [MetricSample] = []) -> [UInt8] {
        for sample in samples {
            let dimensions = sample.dimensions.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            switch sample.kind {
            case .counter: count(sample.label, Int(sample.value), dimensions)
            case .gauge: gauge(sample.label, sample.value, dimensions)
            }
        }
        count("hub_connections_opened_total", snapshot.connectionsOpened)
        count("hub_received_bytes_total", snapshot.bytesReceived)
        count("hub_sent_bytes_total", snapshot.bytesSent)
        count("hub_slow_consumer_closes_total", snapshot.slowConsumerCloses)
        count("hub_auth_failures_total", snapshot.authFailures)
        count("hub_protocol_errors_total", snapshot.protocolErrors)
        count("hub_pipeline_failures_total", snapshot.pipelineFailures)
        count("hub_named_pipeline_failures_total", snapshot.namedPipelineFailures)
        count("hub_rate_limit_closes_total", snapshot.rateLimitCloses)
        count("hub_connection_refusals_total", snapshot.connectionRefusals)
        gauge("hub_connections", snapshot.connections)
        gauge("hub_subscriptions", snapshot.subscriptions)
        gauge("hub_queued_bytes", snapshot.queuedBytes)
        for kind in ["subject", "trigger", "pipeline"] {
            gauge("hub_names", snapshot.namesByKind[kind] ?? 0, [("kind", kind)])
        }
        for (loop, sessions) in snapshot.loopSessions.enumerated() {
            gauge("hub_event_loop_sessions", sessions, [("loop", String(loop))])
        }
        for (index, lag) in snapshot.connectionLoopLagMaximum.enumerated() {
            gauge("hub_connection_loop_lag_max_seconds", Double(lag.nanosecondsForMetrics) / 1e9, [("loop", String(index + 1))])
        }
        gauge("hub_event_loop_lag_max_seconds", Double(snapshot.loopLagMaximum.nanosecondsForMetrics) / 1e9)
        for (loop, spent) in snapshot.loopPassCPUMaximum.enumerated() {
            gauge("hub_event_loop_pass_cpu_max_seconds", Double(spent.nanosecondsForMetrics) / 1e9, [("loop", String(loop))])
        }
        for sample in snapshot.loopLagSamples { lag.recordNanoseconds(sample.nanosecondsForMetrics) }

        for figures in bounded(snapshot.names) {
            let labels = [("name", figures.name), ("kind", figures.kind)]
            count("hub_published_total", figures.published, labels)
            count("hub_delivered_total", figures.delivered, labels)
            count("hub_dropped_total", figures.dropped, labels)
            count("hub_overflows_total", figures.overflows, labels)
        }
        return registry.emitToBuffer()
    }

    /// The per-name figures with at most ``labelCapacity`` names of their own; the rest
    /// are added into `$other`. A name keeps the labels it got first, its `kind` included
    /// (a deleted name's counters live on with no entry, hence no kind, and a name may
    /// come back as another kind): one series per name, so sums never count twice.
    private func bounded(_ names: [String: MetricsSnapshot.NameFigures]) -> [MetricsSnapshot.NameFigures] {
        let buckets: Set<String> = ["$other", "$adhoc"]
        var result: [MetricsSnapshot.NameFigures] = []
        var other = names["$other"] ?? MetricsSnapshot.NameFigures(name: "$other", kind: "shared")
        for name in names.keys.sorted() where !buckets.contains(name) {
            var figures = names[name]!
            if let kind = labelled[name] {
                figures.kind = kind
                result.append(figures)
            } else if labelled.count < labelCapacity {
                labelled[name] = figures.kind
                result.append(figures)
            } else {
                other.add(figures)
            }
        }
        result.append(other)
        result.append(names["$adhoc"] ?? MetricsSnapshot.NameFigures(name: "$adhoc", kind: "shared"))
        return result
    }

    /// Brings the counter `label` (with `dimensions`) up to the cumulative `value`.
    private func count(_ label: String, _ value: Int, _ dimensions: [(String, String)] = []) {
        let key = MetricsExporter.key(label, dimensions)
        var entry = counters[key] ?? (CoreMetrics.Counter(label: label, dimensions: dimensions, factory: factory), 0)
        if value > entry.exported {
            entry.counter.increment(by: value - entry.exported)
            entry.exported = value
        }
        counters[key] = entry
    }

    private func gauge(_ label: String, _ value: Int, _ dimensions: [(String, String)] = []) {
        gauge(label, Double(value), dimensions)
    }

    private func gauge(_ label: String, _ value: Double, _ dimensions: [(String, String)] = []) {
        let key = MetricsExporter.key(label, dimensions)
        let gauge = gauges[key] ?? CoreMetrics.Gauge(label: label, dimensions: dimensions, factory: factory)
        gauges[key] = gauge
        gauge.record(value)
    }

    private static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        dimensions.reduce(label) { $0 + "\u{1}" + $1.0 + "=" + $1.1 }
    }
}

extension Duration {
    /// Whole nanoseconds, clamped to `Int64`.
    var nanosecondsForMetrics: Int64 {
        let (seconds, attoseconds) = components
        guard seconds < Int64.max / 1_000_000_000 else { return .max }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
