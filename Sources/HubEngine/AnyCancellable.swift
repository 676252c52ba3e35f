/// A type-erased cancellable that cancels when it is deinitialised, as in Combine.
///
/// Keep it (for example with ``store(in:)-5bqm4``) for as long as the activity
/// should run; dropping the last reference cancels it.
public final class AnyCancellable: Cancellable, Hashable {
    private var cancelAction: (() -> Void)?

    /// Calls `cancel` once, on the first ``cancel()`` or on deinit.
    public init(_ cancel: @escaping () -> Void) {
        cancelAction = cancel
    }

    /// Cancels `canceller` on the first ``cancel()`` or on deinit.
    public init<C: Cancellable>(_ canceller: C) {
        cancelAction = canceller.cancel
    }

    deinit { cancelAction?() }

    /// Cancels the activity; idempotent.
    public func cancel() {
        guard let action = cancelAction else { return }
        cancelAction = nil
        action()
    }

    /// Appends this cancellable to `collection`.
    public func store<C: RangeReplaceableCollection>(in collection: inout C) where C.Element == AnyCancellable {
        collection.append(self)
    }

    /// Inserts this cancellable into `set`.
    public func store(in set: inout Set<AnyCancellable>) {
        set.insert(self)
    }

    /// Identity equality.
    public static func == (lhs: AnyCancellable, rhs: AnyCancellable) -> Bool { lhs === rhs }

    /// Hashes the identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
