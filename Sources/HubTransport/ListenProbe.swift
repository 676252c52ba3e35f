#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds out why libwebsockets could not listen (it only says "init server
/// failed"): one `bind` of a fresh socket to the same address, with the same
/// SO_REUSEADDR, answered at once (`address already in use`, `permission
/// denied`, `cannot assign requested address`).
///
/// Only for IP literals and `localhost` (no DNS lookup on the loop thread).
enum ListenProbe {
    /// A lower-case reason, or `nil` when the address binds now or cannot be probed.
    static func reason(host: String, port: Int) -> String? {
        guard let address = LiteralSocketAddress(host: host, port: port), let fd = address.makeStreamSocket() else {
            return nil
        }
        defer { close(fd) }
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        guard address.withSocketAddress({ bind(fd, $0, $1) }) != 0 else { return nil }
        return LiteralSocketAddress.reason(errno: errno)
    }
}
