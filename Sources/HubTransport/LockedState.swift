import Foundation

/// A value guarded by a pthread-backed lock (`NSLock`).
///
/// Used instead of `Synchronization.Mutex`, whose futex-based Linux implementation is
/// invisible to ThreadSanitizer (every guarded access would be reported as a race).
public final class LockedState<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// A lock around `value`.
    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
