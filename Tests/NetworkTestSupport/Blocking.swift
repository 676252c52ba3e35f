import Foundation

/// Runs blocking work (a socket read with a timeout, a child process's exit) on a
/// thread of its own, never on the cooperative pool.
///
/// The pool has one thread per core: on a two-core CI machine two tests blocked in
/// `recv` or `waitUntilExit` inside `Task.detached` stopped every other test of the
/// parallel run, until event-loop answers and timeouts were resumed in the wrong
/// order and unrelated tests failed with "timed out" (or a server's own idle timeout
/// fired before the test looked).
public enum Blocking {
    /// `body`'s result, computed on a new thread while the caller is suspended.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try body() })
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// `body`'s result for work that cannot fail.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: body())
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }
}

extension ChildProcess {
    /// Waits for the process to exit without holding a thread of the cooperative pool.
    public func exited() async {
        await Blocking.run { self.waitUntilExit() }
    }
}
