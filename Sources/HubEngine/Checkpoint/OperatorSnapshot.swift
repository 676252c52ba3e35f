import HubValue

/// One operator's snapshot: `{"op": kind, "v": version, ...fields}`, read with its checks.
public struct OperatorSnapshot {
    /// The version it was written at.
    public let version: Int
    /// Its fields.
    public let fields: Value.Object

    /// Reads `value` as a snapshot of operator `kind` at a version in `versions`.
    init(reading value: Value, kind: String, versions: ClosedRange<Int>) throws(CheckpointError) {
        guard case let .object(fields) = value else {
            throw CheckpointError(.malformed, "the state of '\(kind)' is not an object")
        }
        guard let found = fields["op"]?.stringValue, found == kind else {
            throw CheckpointError(
                .wrongOperator, "the state was written by '\(fields["op"]?.stringValue ?? "?")', not by '\(kind)'")
        }
        guard let version = fields["v"]?.intValue, let v = Int(exactly: version), versions.contains(v) else {
            throw CheckpointError(
                .unsupportedVersion,
                "the state of '\(kind)' has version \(fields["v"]?.jsonString() ?? "none"); this broker reads \(versions)")
        }
        self.version = v
        self.fields = fields
    }

    /// The field `name`, or ``CheckpointError/Code/malformed`` when it is missing.
    public func field(_ name: String) throws(CheckpointError) -> Value {
        guard let value = fields[name] else {
            throw CheckpointError(.malformed, "the state of '\(fields["op"]?.stringValue ?? "?")' has no '\(name)'")
        }
        return value
    }

    /// The field `name` decoded with `codec`.
    public func field<T>(_ name: String, _ codec: StateCodec<T>) throws(CheckpointError) -> T {
        try codec.decode(try field(name))
    }

    /// The integer field `name`.
    public func int(_ name: String) throws(CheckpointError) -> Int {
        try field(name, .int)
    }
}
