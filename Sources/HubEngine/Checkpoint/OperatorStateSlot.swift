import HubValue

/// Where one stateful operator of a checkpointed pipeline restores its state from and
/// saves it to (see ``CheckpointRegistry``). Made by ``CheckpointRegistry/slot(at:)``.
public final class OperatorStateSlot {
    /// The operator's full path in its pipeline.
    public let path: String
    private weak var registry: CheckpointRegistry?
    /// A slot of a nested pipeline that is not checkpointed: it restores and saves nothing.
    private let isDetached: Bool
    private var restored: Value?
    private var saver: (() -> Value?)?

    init(path: String, registry: CheckpointRegistry, restored: Value?, detached: Bool = false) {
        self.path = path
        self.registry = registry
        isDetached = detached
        self.restored = restored
    }

    /// The state restored for this operator, once: the first subscription takes it.
    public func takeRestored() -> Value? {
        defer { restored = nil }
        return restored
    }

    /// Sets how the live subscription saves its state (`nil` when it has none to save:
    /// ended, or nothing to keep). The latest subscription's replaces an earlier one's.
    public func attach(_ save: @escaping () -> Value?) {
        saver = save
    }

    /// The operator's state now, or a restored state its subscription has not taken yet
    /// (nothing for a slot of a pipeline that is not checkpointed).
    func save() -> Value? {
        guard !isDetached else { return nil }
        if let restored { return restored }
        return saver?()
    }

    /// Records that the restored state could not be read (the operator starts afresh).
    public func record(_ error: CheckpointError) {
        var error = error
        if error.path == nil { error.path = path }
        registry?.record(error)
    }

    /// Runs `body` in the scope `component` under this operator (a nested pipeline it builds).
    public func withScope<T>(_ component: String, _ body: () -> T) -> T {
        guard let registry else { return body() }
        // What a detached operator builds is detached too.
        if isDetached { return registry.withoutState { () -> T in body() } }
        return registry.withScope(path + "/" + component) { () -> T in body() }
    }

    /// Forgets what was built in the scope `component` under this operator (it has ended).
    public func dropScope(_ component: String) {
        registry?.dropScope(path + "/" + component + "/")
    }
}
