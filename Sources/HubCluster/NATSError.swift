import CNATS

/// A failure of the NATS backplane, with a stable ``Code`` and libnats's own text.
public struct NATSError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What failed; the raw value is stable (logs and tests match it).
    public enum Code: String, Hashable, Sendable {
        /// A server URL is not a `nats://HOST:PORT` URL.
        case invalidURL = "invalid_url"
        /// The library could not set up a connection (options, memory, threads).
        case connectFailed = "connect_failed"
        /// A value could not be published (not connected and the reconnect buffer is full, closed, …).
        case publishFailed = "publish_failed"
        /// A subscription could not be made or ended.
        case subscribeFailed = "subscribe_failed"
        /// A flush did not complete in time (the server is unreachable).
        case flushFailed = "flush_failed"
        /// The connection was closed.
        case closed = "closed"
        /// A JetStream request (a stream's creation, update, deletion, a stored publish, a
        /// read) failed or was not answered in time.
        case jetStreamFailed = "jetstream_failed"
    }

    /// What failed.
    public let code: Code
    /// What happened, with libnats's status text when it gave one.
    public let message: String

    /// An error with a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// An error for the libnats status `status` of the operation `doing`.
    init(_ code: Code, doing: String, status: natsStatus) {
        var text = String(cString: natsStatus_GetText(status))
        var last = NATS_OK
        if let detail = nats_GetLastError(&last), last == status {
            let detailText = String(cString: detail)
            if !detailText.isEmpty, detailText != text { text += " (\(detailText))" }
        }
        self.init(code, "\(doing): \(text)")
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
