import HubValue

/// The counters of one service loop's sessions for the metrics and `$sys.stats`:
/// plain integers, confined to the loop (no lock, no atomic: each loop has its own and
/// the exporter sums them when it collects).
public final class ServiceCounters {
    /// Connections opened (handshake finished and counted).
    public internal(set) var connectionsOpened = 0
    /// Connections closed because their client stopped reading (4008).
    public internal(set) var slowConsumerCloses = 0
    /// Connections refused for a missing or wrong token (4401).
    public internal(set) var authFailures = 0
    /// Client messages answered with a protocol error (`bad_message`, `unknown_op`,
    /// `duplicate_id`, `invalid_demand`).
    public internal(set) var protocolErrors = 0
    /// Pipeline subscriptions that ended with `failed` (an evaluation error in a pipeline).
    public internal(set) var pipelineFailures = 0
    /// Connections closed with 4429 for sending more than their rate limits allow.
    public internal(set) var rateLimitCloses = 0
    /// Connections refused with 4429 at the service's or their identity's connection limit.
    public internal(set) var connectionRefusals = 0
    /// Bytes received and sent by connections that have closed (open ones count their own).
    var closedBytesReceived = 0
    var closedBytesSent = 0

    /// Where events go (`$sys.events`); nothing while unset.
    var eventSink: ((_ type: String, _ fields: Value.Object) -> Void)?

    /// Counters at zero.
    public init() {}

    /// Reports an event of `type` (connect, disconnect, auth_failure, ...) with `fields`.
    func emit(_ type: String, _ fields: Value.Object) {
        eventSink?(type, fields)
    }
}
