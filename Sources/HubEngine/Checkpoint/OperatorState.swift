import HubValue

/// A checkpointed operator's slot with the codec of its elements: what the engine's
/// operators take to be checkpointed (`state:` arguments; `nil` for none).
public struct OperatorState<Element> {
    /// Where the state goes.
    public let slot: OperatorStateSlot
    /// How elements are written.
    public let codec: StateCodec<Element>

    /// The state of the operator at `slot`, whose elements `codec` writes.
    public init(slot: OperatorStateSlot, codec: StateCodec<Element>) {
        self.slot = slot
        self.codec = codec
    }

    /// Applies the restored snapshot of operator `kind` (written at a version in `versions`)
    /// with `apply`, if there is one; a snapshot that cannot be read is recorded and not
    /// applied (`apply` should change nothing before it has read everything). Returns
    /// whether a state was applied.
    @discardableResult
    public func restore(
        _ kind: String, versions: ClosedRange<Int> = 1...1,
        _ apply: (OperatorSnapshot) throws(CheckpointError) -> Void
    ) -> Bool {
        guard let restored = slot.takeRestored() else { return false }
        do throws(CheckpointError) {
            try apply(try OperatorSnapshot(reading: restored, kind: kind, versions: versions))
            return true
        } catch {
            slot.record(error)
            return false
        }
    }

    /// Attaches `save`, which returns the operator's fields now (or `nil` when it has no
    /// state to keep), written as a snapshot of operator `kind` at `version`.
    public func attach(_ kind: String, version: Int = 1, _ save: @escaping () -> Value.Object?) {
        slot.attach {
            guard var fields = save() else { return nil }
            fields["op"] = .string(kind)
            fields["v"] = .int(Int64(version))
            return .object(fields)
        }
    }
}
