import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP/1.1 client over a real TCP socket, for tests of the servers' plain
/// HTTP endpoints: it sends requests and reads each response by its `content-length`,
/// so that several requests can share one keep-alive connection.
///
/// Blocking calls run on a detached task; every read has a generous timeout.
public final class HTTPTestClient: @unchecked Sendable {
    /// One response.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// The headers, names lower-cased.
        public var headers: [String: String]
        /// The body.
        public var body: [UInt8]
        /// The body as UTF-8 text.
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Why a request failed.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public var description: String

        /// A failure saying `description`.
        public init(description: String) { self.description = description }
    }

    let socket: Int32
    var pending: [UInt8] = []
    /// Decoded text of an event stream not yet returned as events.
    var streamText = ""
    /// The chunks of a chunked body read so far (an event stream's writes).
    public internal(set) var chunksRead = 0

    /// Connects to `host:port` (IPv4).
    public init(host: String = "127.0.0.1", port: Int, timeoutSeconds: Int = 30) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        // A throwing initializer of a fully initialised class still runs deinit, which
        // closes the socket (closing it here too would close a descriptor twice).
        guard connected == 0 else {
            throw Failure(description: "connect to \(host):\(port): errno \(errno)")
        }
    }

    deinit { close(socket) }

    /// Whether the server has neither closed nor reset the connection (without waiting
    /// and without consuming what it sent).
    public var isOpen: Bool {
        var byte: UInt8 = 0
        let count = recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count > 0 || (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    }

    /// Sends one request and reads its response (blocking).
    public func send(method: String = "GET", path: String, headers: [String: String] = [:], body: [UInt8] = [])
        throws -> Response
    {
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { request += "Content-Length: \(body.count)\r\n" }
        request += "\r\n"
        let bytes = Array(request.utf8) + body
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += count
        }
        return try readResponse(method: method)
    }

    /// Reads a response's status line and header fields (blocking), leaving its body.
    func readHead() throws -> (status: Int, headers: [String: String]) {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headerEnd: Int?
        while headerEnd == nil {
            if let range = pending.firstRange(of: separator) { headerEnd = range.upperBound; break }
            try fill()
        }
        let head = String(decoding: pending[..<headerEnd!], as: UTF8.self)
        pending.removeFirst(headerEnd!)
        var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure(description: "bad status line in \(head)")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers)
    }

    /// Reads the next response (blocking), for a request written with ``write(_:)``.
    public func readResponse(method: String = "GET") throws -> Response {
        let (status, headers) = try readHead()
        let length = method == "HEAD" ? 0 : Int(headers["content-length"] ?? "0") ?? 0
        while pending.count < length { try fill() }
        let body = Array(pending.prefix(length))
        pending.removeFirst(length)
        return Response(status: status, headers: headers, body: body)
    }

    /// Whether the server has closed the connection (reads until EOF or the timeout).
    public func readsEndOfStream() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count == 0 { return true }
            if count < 0 { return false }
        }
    }

    func fill() throws {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            throw Failure(description: count == 0 ? "the server closed the connection" : "recv: errno \(errno)")
        }
        pending.append(contentsOf: buffer[..<count])
    }

    /// One request on a new connection, run off the caller's thread.
    public static func request(
        port: Int, method: String = "GET", path: String, headers: [String: String] = [:]
    ) async throws -> Response {
        try await Blocking.run {
            let client = try HTTPTestClient(port: port)
            return try client.send(method: method, path: path, headers: headers)
        }
    }
}

extension HTTPTestClient {
    /// Shuts the connection down both ways (the server sees it close; a blocked read ends).
    public func shutdownConnection() {
        shutdown(socket, Int32(SHUT_RDWR))
    }
}

extension HTTPTestClient {
    /// One WebSocket frame as read off the wire.
    public struct Frame: Sendable, Equatable {
        /// FIN and the opcode (0x1 text, 0x2 binary, 0x8 close, 0x9 ping, 0xA pong).
        public var fin: Bool
        public var opcode: UInt8
        /// The payload (servers do not mask).
        public var payload: [UInt8]

        /// A close frame's code, if it carries one.
        public var closeCode: UInt16? {
            guard opcode == 0x8, payload.count >= 2 else { return nil }
            return UInt16(payload[0]) << 8 | UInt16(payload[1])
        }
    }

    /// Sends a WebSocket upgrade request on this connection (`Sec-WebSocket-Version`
    /// `version`, with `headers` added) and returns the server's answer.
    public func upgrade(path: String = "/", version: String = "13", headers: [String: String] = [:]) throws -> Response {
        var all = [
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version": version,
        ]
        all.merge(headers) { $1 }
        return try send(path: path, headers: all)
    }

    /// The bytes of a client frame: FIN as given, `opcode`, `payload` masked with a fixed
    /// key unless `masked` is false (a conformance test's bad frame).
    public static func frame(opcode: UInt8, payload: [UInt8], fin: Bool = true, masked: Bool = true) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            bytes.append(maskBit | UInt8(payload.count))
        } else if payload.count < 1 << 16 {
            bytes += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        } else {
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: payload.count >> shift)) }
        }
        guard masked else { return bytes + payload }
        let key: [UInt8] = [0x37, 0xfa, 0x21, 0x3d]
        bytes += key
        bytes += payload.enumerated().map { $0.element ^ key[$0.offset & 3] }
        return bytes
    }

    /// Writes `bytes` as they are.
    public func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += count
        }
    }

    /// The next frame from the server, or `nil` when the connection ends first (EOF or
    /// reset) or nothing comes within the socket's timeout.
    public func readFrame() -> Frame? {
        func need(_ count: Int) -> Bool {
            while pending.count < count {
                guard (try? fill()) != nil else { return false }
            }
            return true
        }
        guard need(2) else { return nil }
        let fin = pending[0] & 0x80 != 0, opcode = pending[0] & 0x0f
        var length = Int(pending[1] & 0x7f)
        var header = 2
        if length == 126 {
            guard need(4) else { return nil }
            length = Int(pending[2]) << 8 | Int(pending[3])
            header = 4
        } else if length == 127 {
            guard need(10) else { return nil }
            length = pending[2..<10].reduce(0) { $0 << 8 | Int($1) }
            header = 10
        }
        guard need(header + length) else { return nil }
        let payload = Array(pending[header..<(header + length)])
        pending.removeFirst(header + length)
        return Frame(fin: fin, opcode: opcode, payload: payload)
    }
}
