/// Who sent the value the hub is handling: set by ``Hub/publish(_:to:sender:)`` while a
/// `send` propagates (synchronously, on the hub's loop) and by the hot buffers of pipelines
/// while they deliver a value they kept, so that a pipeline failure caused by a value can be
/// logged with that value's sender.
///
/// Values that wait in a timing operator (`delay`, `debounce`, ...) or come from a timer
/// have no sender (`nil`). Confined to the hub's event loop.
public final class ValueOrigin {
    /// The sender of the value being handled: a session id and client name, or `nil`.
    public var sender: String?

    /// No sender yet.
    public init() {}
}
