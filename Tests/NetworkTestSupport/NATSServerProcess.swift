import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real `nats-server` on 127.0.0.1 for the cluster tests: started on ports it chooses
/// itself (`-p -1 -m -1`, read back from its ports file, so that servers started side by
/// side never race for a port), waited for until it accepts connections, stopped and
/// started again on the same ports.
public final class NATSServerProcess: @unchecked Sendable {
    /// Its port (the same across ``restart()``).
    public let port: Int
    /// Its HTTP monitoring port (`/connz?subs=1` lists each connection's subscriptions).
    public let monitorPort: Int
    /// Its URL for clients.
    public var url: String { "nats://127.0.0.1:\(port)" }
    private let jetStreamDirectory: String?
    /// Where the server writes its ports file (`--ports_file_dir`) once it listens.
    private let portsDirectory: String
    private let lock = NSLock()
    private var process: ChildProcess?

    /// Starts a server on `port`, or on a port it chooses (`jetStream`: with `-js`, storing in
    /// a temporary directory).
    public init(port: Int? = nil, jetStream: Bool = false) async throws {
        let temporary = FileManager.default.temporaryDirectory
        jetStreamDirectory = jetStream ? temporary.appendingPathComponent("nats-js-\(UUID().uuidString)").path : nil
        portsDirectory = temporary.appendingPathComponent("nats-ports-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: portsDirectory, withIntermediateDirectories: true)
        let started = try await Self.launch(
            port: port ?? -1, monitorPort: -1, jetStreamDirectory: jetStreamDirectory, portsDirectory: portsDirectory)
        self.port = started.port
        monitorPort = started.monitorPort
        lock.withLock { process = started.process }
    }

    deinit {
        stop()
        if let jetStreamDirectory { try? FileManager.default.removeItem(atPath: jetStreamDirectory) }
        try? FileManager.default.removeItem(atPath: portsDirectory)
    }

    /// A port nothing listens on now: bind 127.0.0.1:0 and read what the kernel chose.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TimedOut(what: "a socket (errno \(errno))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw TimedOut(what: "a free port (bind errno \(errno))") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw TimedOut(what: "a free port (getsockname errno \(errno))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Starts the server again on its ports and waits until it accepts connections.
    public func start(timeout: Duration = .seconds(10)) async throws {
        let started = try await Self.launch(
            port: port, monitorPort: monitorPort, jetStreamDirectory: jetStreamDirectory, portsDirectory: portsDirectory,
            timeout: timeout)
        lock.withLock { process = started.process }
    }

    /// Runs nats-server on `port` and `monitorPort` (-1: one it chooses) until its ports file
    /// says it listens and it accepts a connection. A server that exits at once (its port
    /// still held for a moment by a previous run's socket) is started again (a new process:
    /// one runs only once) until `timeout`.
    private static func launch(
        port: Int, monitorPort: Int, jetStreamDirectory: String?, portsDirectory: String, timeout: Duration = .seconds(10)
    ) async throws -> (process: ChildProcess, port: Int, monitorPort: Int) {
        var arguments = ["-a", "127.0.0.1", "-p", "\(port)", "-m", "\(monitorPort)", "--ports_file_dir", portsDirectory]
        if let jetStreamDirectory { arguments += ["-js", "-sd", jetStreamDirectory] }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            let process = ChildProcess()
            process.executableURL = try executable()
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let pid = process.processIdentifier
            ChildProcesses.killAtExit(pid)
            while process.isRunning {
                // Its own ports file (named after its pid), not another server's port.
                if let ports = listeningPorts(of: pid, in: portsDirectory), accepts(ports.port) {
                    return (process, ports.port, ports.monitorPort)
                }
                guard clock.now < deadline else {
                    kill(pid, SIGKILL)
                    process.waitUntilExit()
                    ChildProcesses.forget(pid)
                    throw TimedOut(what: "nats-server to accept on port \(port)")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            ChildProcesses.forget(pid)
            guard clock.now < deadline else { throw TimedOut(what: "nats-server to start on port \(port)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The client and monitoring ports in the ports file of the server `pid` (written once it
    /// listens: `{"nats": ["nats://127.0.0.1:P"], "monitoring": ["http://127.0.0.1:M"]}`), or
    /// `nil` while there is none (or it is still being written).
    private static func listeningPorts(of pid: Int32, in directory: String) -> (port: Int, monitorPort: Int)? {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        guard let name = files.first(where: { $0.hasSuffix("_\(pid).ports") }),
              let data = FileManager.default.contents(atPath: directory + "/" + name),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let client = (object["nats"] as? [String])?.first.flatMap({ URL(string: $0)?.port }),
              let monitoring = (object["monitoring"] as? [String])?.first.flatMap({ URL(string: $0)?.port })
        else { return nil }
        return (client, monitoring)
    }

    /// Stops the server (SIGKILL: as a crash would) and waits for its exit.
    public func stop() {
        guard let process = lock.withLock({ self.process.take() }) else { return }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        ChildProcesses.forget(process.processIdentifier)
    }

    /// Freezes the server (SIGSTOP): its connections stay open and nothing is answered.
    public func pause() { signal(SIGSTOP) }

    /// Lets a paused server run on (SIGCONT).
    public func resume() { signal(SIGCONT) }

    private func signal(_ number: Int32) {
        lock.withLock {
            if let process, process.isRunning { kill(process.processIdentifier, number) }
        }
    }

    /// Stops the server and starts it again on the same port.
    public func restart() async throws {
        stop()
        try await start()
    }

    /// The subjects each named client connection subscribes to now, from the server's
    /// monitoring endpoint (`/connz?subs=1`).
    public func subscriptions() async throws -> [String: Set<String>] {
        let body = try await Blocking.run { [monitorPort] in try Self.get(port: monitorPort, path: "/connz?subs=1") }
        let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        var result: [String: Set<String>] = [:]
        for connection in object?["connections"] as? [[String: Any]] ?? [] {
            guard let name = connection["name"] as? String else { continue }
            result[name, default: []].formUnion(connection["subscriptions_list"] as? [String] ?? [])
        }
        return result
    }

    /// One JetStream consumer as the monitoring endpoint reports it.
    public struct ConsumerState: Sendable {
        /// Its stream.
        public var stream: String
        /// Its name.
        public var name: String
        /// The stream sequence of the last message delivered to it (0: none).
        public var deliveredStreamSequence: UInt64
    }

    /// Every JetStream consumer, from the monitoring endpoint (`/jsz?consumers=true`).
    public func consumers() async throws -> [ConsumerState] {
        let body = try await Blocking.run { [monitorPort] in
            try Self.get(port: monitorPort, path: "/jsz?accounts=true&streams=true&consumers=true")
        }
        let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        var result: [ConsumerState] = []
        for account in object?["account_details"] as? [[String: Any]] ?? [] {
            for stream in account["stream_detail"] as? [[String: Any]] ?? [] {
                for consumer in stream["consumer_detail"] as? [[String: Any]] ?? [] {
                    let delivered = consumer["delivered"] as? [String: Any]
                    result.append(ConsumerState(
                        stream: stream["name"] as? String ?? "", name: consumer["name"] as? String ?? "",
                        deliveredStreamSequence: (delivered?["stream_seq"] as? NSNumber)?.uint64Value ?? 0))
                }
            }
        }
        return result
    }

    /// The body of an HTTP/1.0 GET (the server answers without chunks and closes: read to the end).
    public static func get(port: Int, path: String) throws -> [UInt8] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TimedOut(what: "a socket (errno \(errno))") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TimedOut(what: "the monitoring port \(port) (errno \(errno))") }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            throw TimedOut(what: "sending to the monitoring port")
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { throw TimedOut(what: "the monitoring answer (errno \(errno))") }
            response += buffer[..<count]
        }
        guard let end = response.firstRange(of: Array("\r\n\r\n".utf8)) else { throw TimedOut(what: "an HTTP answer") }
        return Array(response[end.upperBound...])
    }

    private static func executable() throws -> URL {
        for path in ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return URL(fileURLWithPath: path)
        }
        throw TimedOut(what: "a nats-server executable (apt install nats-server; scripts/dev installs it)")
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    public static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

extension Optional {
    /// The value, leaving `nil` behind.
    public mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
