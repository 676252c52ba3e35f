#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive advisory lock (`flock`) on a file beside the database, held while the
/// store is open: a second broker on the same storage directory is refused instead of
/// handing out the same offsets. The kernel drops it when the process dies.
final class StorageLock {
    private var descriptor: Int32

    /// Takes the lock on `path` (created if needed), or fails at once if another holds it.
    init(path: String) throws(SQLiteError) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw SQLiteError(code: -1, message: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno == EWOULDBLOCK ? "another broker uses this storage directory" : String(cString: strerror(errno))
            close(descriptor)
            throw SQLiteError(code: -1, message: "cannot lock \(path): \(reason)")
        }
        self.descriptor = descriptor
    }

    /// Releases the lock (also done when the store goes away).
    func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
