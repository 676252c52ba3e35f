import HubEngine
import HubValue
import HubWire

/// The checkpoints of a running pipeline (``PipelineEnvironment/checkpoints``): each
/// stateful stage gets a slot under its path in the text's structure.
///
/// A path names a stage by where it stands, not by its position in the text, so that the
/// same text gives the same paths whatever its layout: `2:scan` is the third stage of the
/// pipeline; inside a stage's pipeline argument, `a1` is the argument (`3:merge.a1.1:scan`
/// is the second stage of the second argument of the fourth stage); `t` and `f` are the
/// branches of a choice `c ? p : q`. Nested pipelines built as the pipeline runs get a
/// scope of their own from the operator that builds them (`flatMap`: its path, then the
/// inner publisher's number). The stage's name is part of the path, so that a pipeline
/// whose text changed (restarted with `restartFrom: checkpoint`) gives a state only to a
/// stage of the same kind in the same place.
extension PipelineBuilder {
    /// The path component of stage number `index`.
    static func pathComponent(_ index: Int, _ stage: StageSyntax) -> String { "\(index):\(stage.name)" }

    /// The path of the stage being compiled.
    var statePath: String { path.joined(separator: ".") }

    /// Runs `body` with `component` added to the path.
    func within<T>(_ component: String, _ body: () throws(HubError) -> T) throws(HubError) -> T {
        path.append(component)
        defer { path.removeLast() }
        return try body()
    }

    /// The slot of the stage at `path` in the pipeline being built now, when it is checkpointed.
    func slot(_ path: String, suffix: String = "") -> OperatorStateSlot? {
        environment.checkpoints?.slot(at: path + suffix)
    }

    /// The state of the stage at `path` for values, when it is checkpointed.
    func state(_ path: String) -> OperatorState<Value>? {
        slot(path).map { OperatorState(slot: $0, codec: .value) }
    }

    /// The state of the stage at `path` for counts, when it is checkpointed.
    func intState(_ path: String) -> OperatorState<Int>? {
        slot(path).map { OperatorState(slot: $0, codec: .int) }
    }

    /// Builds a nested pipeline that no operator restores (`switchToLatest`'s inner
    /// pipeline, `catch`'s handler): its stages keep no state in the checkpoint.
    func withoutState(_ build: () -> Pub) -> Pub {
        guard let checkpoints = environment.checkpoints else { return build() }
        return checkpoints.withoutState { () -> Pub in build() }
    }

    /// A flag a stage keeps in the checkpoint (`drop(while:)`: whether it stopped dropping):
    /// a box restored from the slot at `path` and saved there, with `kind`.
    func flag(_ path: String, kind: String) -> StateBox<Bool> {
        let box = StateBox(false)
        guard let slot = slot(path) else { return box }
        let state = OperatorState(slot: slot, codec: StateCodec<Void>.void)
        state.restore(kind) { snapshot throws(CheckpointError) in box.value = try snapshot.field("set", .bool) }
        state.attach(kind) { [weak box] in box.map { ["set": .bool($0.value)] } }
        return box
    }

    /// A cold source (`just`, `sequence`) that does not deliver again, once restored, the
    /// values it delivered before its checkpoint (a nested pipeline rebuilt by a restored
    /// `flatMap`).
    func resumable(_ source: Pub, _ path: String) -> Pub {
        guard let slot = slot(path) else { return source }
        return Publishers.SkipOnRestore(upstream: source, state: slot).eraseToAnyPublisher()
    }
}
