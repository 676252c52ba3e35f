#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IP literal (or `localhost`, taken as 127.0.0.1) and a port as a socket address,
/// made without a DNS lookup, so that a loop thread may use it: the probes that find
/// out why libwebsockets could not connect or listen build their one socket from it.
public struct LiteralSocketAddress {
    /// `AF_INET` or `AF_INET6`.
    public let family: Int32
    private var storage = sockaddr_storage()
    private let length: socklen_t

    /// The address of `host` (an IPv4 or IPv6 literal, or `localhost`) and `port`, or
    /// `nil` for a name that would need a lookup or a port outside 1-65535.
    public init?(host: String, port: Int) {
        guard (1...65535).contains(port) else { return nil }
        let literal = host == "localhost" ? "127.0.0.1" : host
        let networkPort = in_port_t(UInt16(port).bigEndian)
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = networkPort
            family = AF_INET
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeBytes(of: &v4) { address in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: address) } }
        } else if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = networkPort
            family = AF_INET6
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeBytes(of: &v6) { address in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: address) } }
        } else {
            return nil
        }
    }

    /// A new TCP socket of the address's family (the caller closes it), or `nil`.
    public func makeStreamSocket() -> Int32? {
        #if canImport(Glibc)
        let stream = Int32(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        let fd = socket(family, stream, 0)
        return fd >= 0 ? fd : nil
    }

    /// Calls `body` with the address and its length, as `connect` and `bind` take them.
    public func withSocketAddress<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        withUnsafeBytes(of: storage) { bytes in
            body(bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    /// The system's text for an `errno` value, in lower case (`connection refused`).
    public static func reason(errno code: Int32) -> String? {
        guard let text = strerror(code) else { return nil }
        return String(cString: text).lowercased()
    }
}
