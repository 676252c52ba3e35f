import Foundation
import HubValue
import Synchronization

/// hubcli's two streams: data on standard output (one compact JSON value per
/// line), status and errors on standard error prefixed with `hubcli: `.
///
/// Writes go straight to the file descriptors. When standard output's reader
/// has gone (`hubcli subscribe … | head -3`), a write fails with EPIPE (hubcli
/// ignores SIGPIPE): the data functions return false and ``isClosed`` becomes
/// true, and the command ends quietly with status 0, as `cat` does.
enum Output {
    private static let closed = Atomic<Bool>(false)

    /// Whether a write to standard output failed (its reader is gone).
    static var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// Writes one line of data to standard output; false when standard output is closed.
    @discardableResult
    static func line(_ text: String) -> Bool {
        data(Array((text + "\n").utf8))
    }

    /// Writes `value` as one line of compact JSON to standard output; false when standard output is closed.
    @discardableResult
    static func value(_ value: Value) -> Bool {
        var bytes = value.jsonBytes()
        bytes.append(UInt8(ascii: "\n"))
        return data(bytes)
    }

    /// Writes a status line (`hubcli: TEXT`) to standard error.
    static func status(_ text: String) {
        message("hubcli: \(text)")
    }

    /// Writes a line to standard error as it is (a failure to write is ignored).
    static func message(_ text: String) {
        _ = writeAll(STDERR_FILENO, Array((text + "\n").utf8))
    }

    private static func data(_ bytes: [UInt8]) -> Bool {
        guard !isClosed else { return false }
        if writeAll(STDOUT_FILENO, bytes) { return true }
        closed.store(true, ordering: .relaxed)
        return false
    }

    /// Writes all of `bytes` to `descriptor`; false on an error (EPIPE: the reader is gone).
    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }
}
