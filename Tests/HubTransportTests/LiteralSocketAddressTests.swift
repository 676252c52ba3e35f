#if canImport(Glibc)
import Glibc
#endif
@testable import HubTransport
import Testing

/// Socket addresses from IP literals, and the probe that tells why a listen failed,
/// against real sockets on loopback.
@Suite("Literal socket addresses and the listen probe")
struct LiteralSocketAddressTests {
    @Test func literalsAndLocalhostMakeAddressesNamesAndBadPortsDoNot() {
        #expect(LiteralSocketAddress(host: "127.0.0.1", port: 80)?.family == AF_INET)
        #expect(LiteralSocketAddress(host: "localhost", port: 80)?.family == AF_INET)
        #expect(LiteralSocketAddress(host: "::1", port: 80)?.family == AF_INET6)
        #expect(LiteralSocketAddress(host: "example.org", port: 80) == nil)
        #expect(LiteralSocketAddress(host: "127.0.0.1", port: 0) == nil)
        #expect(LiteralSocketAddress(host: "127.0.0.1", port: 65_536) == nil)
    }

    @Test func theAddressBindsToItsPort() throws {
        let address = try #require(LiteralSocketAddress(host: "127.0.0.1", port: 1))
        // Bind port 0 of the same family through a second address, then read the port back.
        let fd = try #require(address.makeStreamSocket())
        defer { close(fd) }
        var any = sockaddr_in()
        any.sin_family = sa_family_t(AF_INET)
        any.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &any) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(bound == 0)
        #expect(listen(fd, 1) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &any) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: any.sin_port))
        // A listening port: the probe's own bind is refused, and says why.
        #expect(ListenProbe.reason(host: "127.0.0.1", port: port) == "address already in use")
        // And the literal address reaches it.
        let client = try #require(LiteralSocketAddress(host: "localhost", port: port))
        let clientFd = try #require(client.makeStreamSocket())
        defer { close(clientFd) }
        #expect(client.withSocketAddress { connect(clientFd, $0, $1) } == 0)
    }

    @Test func aNameIsNotProbedAndErrnoReadsAsText() {
        #expect(ListenProbe.reason(host: "example.org", port: 80) == nil)
        #expect(LiteralSocketAddress.reason(errno: ECONNREFUSED) == "connection refused")
    }
}
