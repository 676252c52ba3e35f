#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HubTransport

/// Finds out why a TCP connection failed when libwebsockets only says "Unable to
/// connect": one non-blocking `connect` to the same address, answered at once
/// for a refused port (the common case: nothing listens there).
///
/// Only for IP literals and `localhost` (no DNS lookup on the loop thread); the
/// wait for an answer is at most 50 ms.
enum ConnectionProbe {
    /// A lower-case reason such as `connection refused`, or `nil` when it cannot tell.
    static func reason(host: String, port: Int) -> String? {
        guard let address = LiteralSocketAddress(host: host, port: port), let fd = address.makeStreamSocket() else {
            return nil
        }
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
        if address.withSocketAddress({ connect(fd, $0, $1) }) == 0 { return nil }
        var code = errno
        if code == EINPROGRESS {
            var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&descriptor, 1, 50) == 1 else { return nil }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error != 0 else { return nil }
            code = error
        }
        return LiteralSocketAddress.reason(errno: code)
    }
}
