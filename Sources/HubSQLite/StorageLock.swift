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
    /// The boot of the machine the previous holder ran on, as it wrote it (`nil`: none written).
    private(set) var previousBoot: String?

    /// Takes the lock on `path` (created if needed), or fails at once if another holds it;
    /// then notes `boot` in it, the previous holder's note kept in ``previousBoot``.
    init(path: String, boot: String? = nil) throws(SQLiteError) {
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
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        if count > 0 {
            let text = String(decoding: buffer[0..<count], as: UTF8.self)
            if text.hasPrefix("boot ") {
                previousBoot = String(text.dropFirst(5).prefix { $0 != "\n" })
            }
        }
        if let boot {
            let line = Array("boot \(boot)\n".utf8)
            if ftruncate(descriptor, 0) == 0 { _ = pwrite(descriptor, line, line.count, 0) }
        }
    }

    /// Releases the lock (also done when the store goes away).
    func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
