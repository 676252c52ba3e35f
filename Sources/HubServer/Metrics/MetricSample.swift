/// One figure a part of the broker outside the service (a cluster node) adds to
/// `/metrics` through ``HubService/addMetricsSource(_:)``.
public struct MetricSample: Sendable, Equatable {
    /// How the figure is exported.
    public enum Kind: Sendable, Equatable {
        /// A cumulative count (exported as a Prometheus counter; it never goes down).
        case counter
        /// A value now (a Prometheus gauge).
        case gauge
    }

    /// The metric's name (`hub_cluster_connected`).
    public var label: String
    /// Its value: the cumulative count of a counter, the current value of a gauge.
    public var value: Double
    /// Counter or gauge.
    public var kind: Kind
    /// Its labels.
    public var dimensions: [String: String]

    /// A sample.
    public init(_ label: String, _ value: Double, kind: Kind, dimensions: [String: String] = [:]) {
        self.label = label
        self.value = value
        self.kind = kind
        self.dimensions = dimensions
    }
}
