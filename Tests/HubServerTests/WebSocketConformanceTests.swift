import Glibc
import HubServer
import HubValue
import NetworkTestSupport
import Testing

/// RFC 6455 over a raw socket: a client that breaks the
/// framing rules gets a close frame with 1002 (protocol error; 1007 for text that is not
/// UTF-8, 1009 for a message declared too big), never an echo of what it sent or a
/// silent TCP drop; an unsupported `Sec-WebSocket-Version` is not upgraded, a malformed
/// upgrade is answered 400. The broker serves its other clients throughout.
@Suite("WebSocket conformance (RFC 6455 §4.2.1, §5.5, §7.4)")
struct WebSocketConformanceTests {
    /// A raw connection upgraded with version 13.
    static func upgraded(_ server: HubServerHarness, timeoutSeconds: Int = 20) async throws -> HTTPTestClient {
        try await Blocking.run {
            let client = try HTTPTestClient(port: server.port, timeoutSeconds: timeoutSeconds)
            let answer = try client.upgrade()
            guard answer.status == 101 else { throw HTTPTestClient.Failure(description: "upgrade: \(answer.status)") }
            return client
        }
    }

    /// Writes `frames` on a fresh upgraded connection and returns the first close frame
    /// the server sends (skipping `welcome` and other data), or `nil` if the connection
    /// ends without one.
    static func closeAnswer(
        _ server: HubServerHarness, to frames: [[UInt8]], timeoutSeconds: Int = 20
    ) async throws -> HTTPTestClient.Frame? {
        let client = try await upgraded(server, timeoutSeconds: timeoutSeconds)
        return try await Blocking.run {
            for frame in frames { try client.write(frame) }
            while let frame = client.readFrame() {
                if frame.opcode == 0x8 { return frame }
            }
            return nil
        }
    }

    static func close(_ code: UInt16, _ reason: String = "") -> [UInt8] {
        HTTPTestClient.frame(opcode: 0x8, payload: [UInt8(code >> 8), UInt8(code & 0xff)] + Array(reason.utf8))
    }

    static func expectServing(_ server: HubServerHarness) async throws {
        let client = try await server.connect()
        try await client.send(json(["op": "list", "ack": 1]))
        #expect(try await client.next()["op"] == "catalog")
    }

    @Test func invalidCloseCodesAreAnsweredWith1002() async throws {
        try await withServer { server in
            for code: UInt16 in [0, 999, 1004, 1005, 1006, 1016, 2999, 5000, 65535] {
                let answer = try await Self.closeAnswer(server, to: [Self.close(code, "bye")])
                #expect(answer?.closeCode == 1002, "close code \(code): \(String(describing: answer))")
            }
            // Valid codes are answered with the same code.
            for code: UInt16 in [1000, 1001, 1003, 3000, 4999] {
                let answer = try await Self.closeAnswer(server, to: [Self.close(code)])
                #expect(answer?.closeCode == code, "close code \(code): \(String(describing: answer))")
            }
            try await Self.expectServing(server)
        }
    }

    @Test func aCloseReasonThatIsNotUTF8IsAnsweredWith1007() async throws {
        try await withServer { server in
            for reason: [UInt8] in [[0xff, 0xfe], [0xc0, 0xaf], [0xed, 0xa0, 0x80], Array("bye".utf8) + [0xe2, 0x82]] {
                let frame = HTTPTestClient.frame(opcode: 0x8, payload: [0x03, 0xe8] + reason)
                let answer = try await Self.closeAnswer(server, to: [frame])
                #expect(answer?.closeCode == 1007, "reason \(reason): \(String(describing: answer))")
            }
            // A UTF-8 reason, multi-byte scalars included, is answered with the same code.
            let answer = try await Self.closeAnswer(server, to: [Self.close(1000, "au revoir, €")])
            #expect(answer?.closeCode == 1000)
            try await Self.expectServing(server)
        }
    }

    @Test func aOneByteClosePayloadIsAProtocolError() async throws {
        try await withServer { server in
            let answer = try await Self.closeAnswer(server, to: [HTTPTestClient.frame(opcode: 0x8, payload: [0x03])])
            #expect(answer?.closeCode == 1002, "\(String(describing: answer))")
            try await Self.expectServing(server)
        }
    }

    @Test func anUnmaskedClientFrameIsAProtocolError() async throws {
        try await withServer { server in
            let text = Array(json(["op": "list", "ack": 1]).utf8)
            let answer = try await Self.closeAnswer(
                server, to: [HTTPTestClient.frame(opcode: 0x1, payload: text, masked: false)], timeoutSeconds: 5)
            #expect(answer?.closeCode == 1002, "\(String(describing: answer))")
            try await Self.expectServing(server)
        }
    }

    @Test func aPingLongerThan125BytesIsAProtocolError() async throws {
        try await withServer { server in
            let answer = try await Self.closeAnswer(server, to: [HTTPTestClient.frame(opcode: 0x9, payload: Array(repeating: 7, count: 126))])
            #expect(answer?.closeCode == 1002, "\(String(describing: answer))")
            try await Self.expectServing(server)
        }
    }

    /// A masked client frame with its first byte as given and the length in the form asked
    /// (7, 16 or 64 bits), for the rules a well-behaved client cannot break.
    static func rawFrame(first: UInt8, payload: [UInt8], lengthForm: Int? = nil, declared: UInt64? = nil) -> [UInt8] {
        let count = declared ?? UInt64(payload.count)
        var bytes: [UInt8] = [first]
        switch lengthForm ?? (count < 126 ? 7 : count < 1 << 16 ? 16 : 64) {
        case 7: bytes.append(0x80 | UInt8(count))
        case 16: bytes += [0x80 | 126, UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
        default:
            bytes.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: count >> UInt64(shift))) }
        }
        let key: [UInt8] = [0x37, 0xfa, 0x21, 0x3d]
        return bytes + key + payload.enumerated().map { $0.element ^ key[$0.offset & 3] }
    }

    /// Every rule of RFC 6455 §5 a frame's header can break, each on its own connection:
    /// answered with a close frame carrying 1002 (1009 for a message declared too big).
    @Test func everyBrokenFramingRuleIsAnsweredWithItsCloseCode() async throws {
        let text = Array("{\"op\":\"list\"}".utf8)
        let cases: [(String, [UInt8], UInt16)] = [
            ("RSV1", Self.rawFrame(first: 0x80 | 0x40 | 0x1, payload: text), 1002),
            ("RSV2", Self.rawFrame(first: 0x80 | 0x20 | 0x1, payload: text), 1002),
            ("RSV3", Self.rawFrame(first: 0x80 | 0x10 | 0x1, payload: text), 1002),
            ("opcode 3", Self.rawFrame(first: 0x83, payload: [1]), 1002),
            ("opcode 0xB", Self.rawFrame(first: 0x8B, payload: [1]), 1002),
            ("fragmented ping", Self.rawFrame(first: 0x09, payload: [1]), 1002),
            ("close of 126 bytes", Self.rawFrame(first: 0x88, payload: [3, 232] + Array(repeating: 0x61, count: 124)), 1002),
            ("16-bit length for 5 bytes", Self.rawFrame(first: 0x81, payload: Array("hello".utf8), lengthForm: 16), 1002),
            ("64-bit length with its top bit", Array(Self.rawFrame(first: 0x81, payload: [], lengthForm: 64, declared: 1 << 63).prefix(14)), 1002),
            ("continuation without a start", Self.rawFrame(first: 0x80, payload: [1]), 1002),
            ("text inside a fragmented text", Self.rawFrame(first: 0x01, payload: [0x7b]) + Self.rawFrame(first: 0x81, payload: [1]), 1002),
            // Only the header: the broker does not wait for a terabyte.
            ("length over the message limit", Array(Self.rawFrame(first: 0x82, payload: [], lengthForm: 64, declared: 1 << 40).prefix(14)), 1009),
            ("text not UTF-8", HTTPTestClient.frame(opcode: 0x1, payload: [0x22, 0xc0, 0xaf, 0x22]), 1007),
        ]
        try await withServer { server in
            for (name, bytes, code) in cases {
                let answer = try await Self.closeAnswer(server, to: [bytes], timeoutSeconds: 5)
                #expect(answer?.closeCode == code, "\(name): \(String(describing: answer))")
            }
            try await Self.expectServing(server)
        }
    }

    /// A ping is answered with a pong carrying its payload; a flood of pings costs at most
    /// one pong per read, and the connection keeps serving.
    @Test func pingsAreAnsweredWithPongs() async throws {
        try await withServer { server in
            let client = try await Self.upgraded(server)
            let pong = try await Blocking.run { () -> HTTPTestClient.Frame? in
                try client.write(HTTPTestClient.frame(opcode: 0x9, payload: Array("are you there".utf8)))
                while let frame = client.readFrame() {
                    if frame.opcode == 0xA { return frame }
                }
                return nil
            }
            #expect(pong?.payload == Array("are you there".utf8))
            let flood = (0..<2000).flatMap { HTTPTestClient.frame(opcode: 0x9, payload: [UInt8(truncatingIfNeeded: $0)]) }
            let answered = try await Blocking.run { () -> (pongs: Int, answer: [UInt8]?) in
                try client.write(flood)
                try client.write(HTTPTestClient.frame(opcode: 0x1, payload: Array("{\"op\":\"list\",\"ack\":7}".utf8)))
                var pongs = 0
                while let frame = client.readFrame() {
                    if frame.opcode == 0xA { pongs += 1 }
                    if frame.opcode == 0x1, String(decoding: frame.payload, as: UTF8.self).contains("catalog") {
                        return (pongs, frame.payload)
                    }
                }
                return (pongs, nil)
            }
            #expect(answered.answer != nil)
            #expect(answered.pongs >= 1 && answered.pongs <= 2000)
        }
    }

    /// The opening handshake's rules (§4.2.1): HTTP/1.1, GET, a 16-byte key.
    @Test func malformedUpgradesAreRefusedWith400() async throws {
        try await withServer { server in
            let requests = [
                "GET / HTTP/1.0\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: c2hvcnQ=\r\nSec-WebSocket-Version: 13\r\n\r\n",
                "POST / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
            ]
            for request in requests {
                let port = server.port
                let answer = await Blocking.run { rawRequest(port: port, Array(request.utf8)) }
                #expect(answer.hasPrefix("HTTP/1.1 400"), "\(request.prefix(30)): \(answer)")
            }
            try await Self.expectServing(server)
        }
    }

    @Test func aFragmentedCloseFrameIsAProtocolError() async throws {
        try await withServer { server in
            let answer = try await Self.closeAnswer(server, to: [HTTPTestClient.frame(opcode: 0x8, payload: [0x03, 0xe8], fin: false)])
            #expect(answer?.closeCode == 1002, "\(String(describing: answer))")
            try await Self.expectServing(server)
        }
    }

    @Test func aCloseInsideAFragmentedMessageIsAnswered() async throws {
        try await withServer { server in
            let first = HTTPTestClient.frame(opcode: 0x1, payload: Array("{\"op\":".utf8), fin: false)
            let answer = try await Self.closeAnswer(server, to: [first, Self.close(1000)])
            #expect(answer?.closeCode == 1000, "\(String(describing: answer))")
            try await Self.expectServing(server)
        }
    }

    @Test func onlyVersion13IsUpgraded() async throws {
        try await withServer { server in
            for version in ["8", "7", "14", "x"] {
                let answer = try await Blocking.run { () -> HTTPTestClient.Response? in
                    let client = try HTTPTestClient(port: server.port, timeoutSeconds: 20)
                    return try? client.upgrade(version: version)
                }
                #expect(answer?.status == 426, "version \(version): \(String(describing: answer?.status))")
            }
            try await Self.expectServing(server)
        }
    }
}

/// Sends `bytes` on a new connection to `port` and returns what comes back until the end
/// of a response head, the end of the stream, or 10 s (for requests `HTTPTestClient`
/// cannot make, such as an HTTP/1.0 upgrade).
private func rawRequest(port: Int, _ bytes: [UInt8]) -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return "" }
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while received.firstRange(of: [13, 10, 13, 10]) == nil {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { break }
        received += buffer[..<count]
    }
    return String(decoding: received, as: UTF8.self)
}
