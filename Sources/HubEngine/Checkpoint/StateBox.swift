/// A subscription's state held by reference, so that the closures of an operator and
/// its checkpoint's saver share it (the saver holds it weakly: a subscription that
/// has ended saves nothing).
public final class StateBox<State> {
    /// The state.
    public var value: State

    /// A box holding `value`.
    public init(_ value: State) {
        self.value = value
    }
}
