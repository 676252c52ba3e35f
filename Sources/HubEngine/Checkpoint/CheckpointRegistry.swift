import HubValue

/// The states of one checkpointed pipeline's stateful operators, each under its path.
///
/// Reaqtor's shape: every stateful operator of a pipeline built for checkpoints gets a
/// slot (``slot(at:)``) under a path that is stable for the same pipeline text (the
/// pipeline compiler names a stage by where it stands in the text's structure, not by
/// its position in memory). When one of its subscriptions starts, the operator restores
/// the state the slot was given, if any, and attaches how to save its current state;
/// ``snapshot()`` then asks every live operator for its state.
///
/// - **A consistent cut.** On one event loop nothing is in flight inside a pipeline
///   between two passes of the loop: a snapshot taken then holds every operator's state
///   after the same inputs (no barriers, as Flink needs them between threads).
/// - **Nested pipelines.** An operator that builds pipelines as it runs (`flatMap`)
///   builds each one in a scope of its own (``withScope(_:_:)``): the operators inside
///   get paths under it, and their states are saved and restored with the instance.
/// - **States not claimed yet.** A restored state whose operator has not subscribed yet
///   (the suffix of a `prepend`, waiting for its prefix) is kept and written again by
///   every snapshot until it is.
/// - **Failures.** A state that cannot be read (``CheckpointError``) is not applied: its
///   operator starts from scratch and the error is kept in ``failures`` for the
///   registry's owner, who should not run a pipeline half restored.
///
/// Confined to the pipeline's thread, like the operators.
public final class CheckpointRegistry {
    /// States handed in by ``init(restoring:)`` that no operator has claimed yet.
    private var pending: [String: Value]
    /// Every slot made, by full path (the latest one for a path that was made again).
    private var slots: [String: OperatorStateSlot] = [:]
    /// The scope of the nested pipeline being built (empty at the top level).
    private var scope = ""
    /// Set while building a nested pipeline whose operators are not checkpointed.
    private var detached = 0
    /// The states that could not be restored.
    public private(set) var failures: [CheckpointError] = []

    /// A registry restoring `states` (a ``snapshot()`` of an earlier instance of the same
    /// pipeline), or starting every operator afresh when it is empty.
    public init(restoring states: [String: Value] = [:]) {
        pending = states
    }

    /// Whether the registry was given states to restore and some are still waiting for their operator.
    public var hasUnclaimedStates: Bool { !pending.isEmpty }

    /// The paths of the restored states no operator has claimed yet.
    public var unclaimedPaths: [String] { pending.keys.sorted() }

    /// The slot of the operator at `path` in the current scope, holding the state restored
    /// for it if there is one (a slot made again for the same path gets none: a
    /// resubscription starts afresh, as in Combine).
    public func slot(at path: String) -> OperatorStateSlot {
        let full = scope + path
        // A pipeline built where nothing restores it (by an operator that does not
        // checkpoint what it builds): a slot that restores and saves nothing.
        guard detached == 0 else { return OperatorStateSlot(path: full, registry: self, restored: nil, detached: true) }
        let slot = OperatorStateSlot(path: full, registry: self, restored: pending.removeValue(forKey: full))
        slots[full] = slot
        return slot
    }

    /// Every operator's state now, by path, with the restored states still unclaimed.
    public func snapshot() -> [String: Value] {
        var states = pending
        for (path, slot) in slots {
            if let state = slot.save() { states[path] = state }
        }
        return states
    }

    /// Runs `body` with the current scope extended by `component`: the operators built in
    /// it (a nested pipeline's) get paths under it.
    public func withScope<T, E: Error>(_ component: String, _ body: () throws(E) -> T) throws(E) -> T {
        let previous = scope
        scope = previous + component + "/"
        defer { scope = previous }
        return try body()
    }

    /// Whether operators built now are at the top level of the pipeline (not inside a
    /// nested pipeline some operator builds as it runs).
    public var isTopLevel: Bool { scope.isEmpty && detached == 0 }

    /// Runs `body` building a nested pipeline whose operators are not checkpointed: an
    /// operator that builds pipelines as it runs without keeping them in its own state
    /// (`switchToLatest`, `catch`) builds them here, so that they neither claim states
    /// restored for others nor write states nothing would restore.
    public func withoutState<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        detached += 1
        defer { detached -= 1 }
        return try body()
    }

    /// The full path of `component` in the current scope, as ``withScope(_:_:)`` would open it.
    public func scopePath(_ component: String) -> String { scope + component + "/" }

    /// Forgets the slots and unclaimed states under the scope `prefix` (a ``scopePath(_:)``):
    /// the nested pipeline built there has ended.
    public func dropScope(_ prefix: String) {
        slots = slots.filter { !$0.key.hasPrefix(prefix) }
        pending = pending.filter { !$0.key.hasPrefix(prefix) }
    }

    /// Records a state that could not be restored.
    func record(_ error: CheckpointError) {
        failures.append(error)
    }
}
