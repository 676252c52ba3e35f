/// Why a checkpointed state could not be restored: a snapshot written by another
/// operator, by a version of an operator this engine does not read, or that does not
/// have the shape its operator writes.
///
/// The engine never restores part of a state: an operator that meets one of these
/// starts from scratch and records the error in its ``CheckpointRegistry``, whose owner
/// decides what to do with the whole pipeline (the hub starts it afresh, and says why).
public struct CheckpointError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, stable for programs.
    public enum Code: String, Hashable, Sendable {
        /// The snapshot belongs to another kind of operator (the pipeline's shape changed).
        case wrongOperator = "wrong_operator"
        /// The snapshot's version is not one this operator reads.
        case unsupportedVersion = "unsupported_version"
        /// The snapshot does not have the shape its operator writes.
        case malformed = "malformed"
    }

    /// The stable code.
    public var code: Code
    /// The operator's path in its pipeline (see ``CheckpointRegistry``), when known.
    public var path: String?
    /// What was wrong, for people.
    public var message: String

    /// An error with `code` and `message`, at `path` if known.
    public init(_ code: Code, _ message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    /// `path: message`.
    public var description: String { path.map { "\($0): \(message)" } ?? message }
}
