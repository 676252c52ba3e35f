/// Something that can be cancelled: a subscription, a connection, a scheduled action.
///
/// `cancel()` is idempotent throughout the engine: a second call does nothing.
public protocol Cancellable {
    /// Stops the activity and frees its resources.
    func cancel()
}

extension Cancellable {
    /// Wraps this cancellable in an ``AnyCancellable`` and stores it in `collection`.
    public func store<C: RangeReplaceableCollection>(in collection: inout C) where C.Element == AnyCancellable {
        AnyCancellable(self).store(in: &collection)
    }

    /// Wraps this cancellable in an ``AnyCancellable`` and stores it in `set`.
    public func store(in set: inout Set<AnyCancellable>) {
        AnyCancellable(self).store(in: &set)
    }
}
