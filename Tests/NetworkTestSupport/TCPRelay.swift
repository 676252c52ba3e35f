import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on 127.0.0.1 between a client and a server: the network a test can
/// cut. Each accepted connection is forwarded to `127.0.0.1:target` byte for byte by
/// two threads; ``cut()`` drops every relayed connection (both ends see the TCP
/// connection end, as when a network drops), and while ``isRefusing`` new connections
/// are closed as soon as they are accepted (the network is still down).
public final class TCPRelay: @unchecked Sendable {
    /// The port clients connect to.
    public let port: Int
    private let target: Int
    private let listener: Int32
    private let lock = NSLock()
    private var sockets: Set<Int32> = []
    private var refusing = false
    private var stopped = false
    private var acceptedCount = 0
    private let recordsFromServer: Bool
    private var fromServer: [UInt8] = []

    /// A relay to `127.0.0.1:target` on a free port; with `recordingFromServer`, it keeps
    /// a copy of every byte the server sends (``receivedFromServer``).
    public init(to target: Int, recordingFromServer: Bool = false) throws {
        self.target = target
        recordsFromServer = recordingFromServer
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw TCPRelayError(description: "socket: errno \(errno)") }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = TCPRelay.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 64) == 0 else {
            close(listener)
            throw TCPRelayError(description: "bind/listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in self.acceptLoop() }
        thread.name = "tcp-relay"
        thread.start()
    }

    /// Whether new connections are closed at once.
    public var isRefusing: Bool {
        get { lock.withLock { refusing } }
        set { lock.withLock { refusing = newValue } }
    }

    /// The bytes the server sent so far, over every connection (empty unless recording).
    public var receivedFromServer: [UInt8] { lock.withLock { fromServer } }

    /// Connections accepted and relayed so far.
    public var accepted: Int { lock.withLock { acceptedCount } }

    /// Drops every relayed connection.
    public func cut() {
        let open = lock.withLock { sockets }
        for socket in open { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    /// Stops accepting and drops every connection.
    public func stop() {
        lock.withLock { stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        cut()
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if lock.withLock({ stopped }) { break }
                if errno == EINTR { continue }
                break
            }
            if lock.withLock({ refusing || stopped }) {
                close(client)
                continue
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = TCPRelay.loopback(port: UInt16(target))
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                close(server)
                close(client)
                continue
            }
            lock.withLock {
                sockets.insert(client)
                sockets.insert(server)
                acceptedCount += 1
            }
            let pair = Pair()
            for (from, to) in [(client, server), (server, client)] {
                let record = recordsFromServer && from == server
                let thread = Thread { [self] in self.pump(from: from, to: to, pair: pair, record: record) }
                thread.start()
            }
        }
        close(listener)
    }

    /// Counts the two directions of one relayed connection; the last one closes both sockets.
    private final class Pair: @unchecked Sendable {
        private let lock = NSLock()
        private var finished = 0
        func finish() -> Bool { lock.withLock { finished += 1; return finished == 2 } }
    }

    private func pump(from: Int32, to: Int32, pair: Pair, record: Bool) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(from, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            if record { lock.withLock { fromServer.append(contentsOf: buffer[0..<count]) } }
            var sent = 0
            while sent < count {
                let wrote = buffer[sent..<count].withUnsafeBytes { send(to, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if wrote <= 0 { break }
                sent += wrote
            }
            if sent < count { break }
        }
        // One direction ended: end the other too (a dropped network ends both).
        shutdown(from, Int32(SHUT_RDWR))
        shutdown(to, Int32(SHUT_RDWR))
        if pair.finish() {
            lock.withLock {
                sockets.remove(from)
                sockets.remove(to)
            }
            close(from)
            close(to)
        }
    }
}

/// A relay that could not be set up.
public struct TCPRelayError: Error, CustomStringConvertible {
    public var description: String
}
