import HubValue

/// A failure in the hub: the error of every hub stream and of every refused request.
///
/// `code` is the stable protocol error code (PROTOCOL.md §6); `message` is for
/// people; `data` carries a JSON value where the protocol defines one (the
/// error value of a failed stream, the line and column of a pipeline error).
public struct HubError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The stable error codes of protocol v1.
    public enum Code: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// Not JSON, not an object, a binary message, a missing or ill-typed field.
        case badMessage = "bad_message"
        /// An `op` the protocol does not define.
        case unknownOp = "unknown_op"
        /// No such subject, pipeline or trigger, or a name of another kind.
        case notFound = "not_found"
        /// A `subscribe` with an id that is still live.
        case duplicateId = "duplicate_id"
        /// A demand outside the protocol's rules.
        case invalidDemand = "invalid_demand"
        /// Pipeline text that does not compile.
        case pipelineError = "pipeline_error"
        /// The stream failed; `data` carries the error value.
        case failed = "failed"
        /// A subscription's buffer overflowed with the `error` policy.
        case overflow = "overflow"
        /// The client may not do this.
        case forbidden = "forbidden"
        /// Authentication is missing or wrong.
        case unauthorized = "unauthorized"
        /// A server limit was exceeded.
        case limitExceeded = "limit_exceeded"
        /// A send, complete or fail to a finished subject.
        case completed = "completed"
        /// A value the subject's JSON Schema refuses; `data` says where and why.
        case invalidValue = "invalid_value"
        /// The durable store cannot take the value now (a full disk, I/O errors, a damaged
        /// page): it was not stored and not delivered; values acknowledged before are kept.
        /// Publishing again later may succeed.
        case storageUnavailable = "storage_unavailable"
        /// The server is stopping.
        case shuttingDown = "shutting_down"
        /// A server bug.
        case `internal` = "internal"

        public var description: String { rawValue }
    }

    /// The stable code.
    public var code: Code
    /// A human-readable explanation that names the offending part.
    public var message: String
    /// A JSON value with details, where the protocol defines one.
    public var data: Value?

    /// An error with `code`, `message` and optional `data`.
    public init(_ code: Code, _ message: String, data: Value? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// The failure of a stream whose source failed with the JSON value `value`
    /// (a subject's `fail`, or an error raised by a pipeline).
    public static func failed(_ value: Value, message: String? = nil) -> HubError {
        HubError(.failed, message ?? "the stream failed", data: value)
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
