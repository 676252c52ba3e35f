import HubServer
import HubValue
import NetworkTestSupport
import Testing

/// RFC 6455 over a raw socket (issue 12, reproduction 9): a client that breaks the
/// framing rules gets a close frame with 1002 (protocol error), never an echo of what it
/// sent or a silent TCP drop; an unsupported `Sec-WebSocket-Version` is not upgraded.
/// The broker serves its other clients throughout.
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

    // libwebsockets 4.1.6 (Debian's) parses frame headers itself and offers no hook
    // before: it accepts unmasked client frames and drops the TCP connection (no close
    // frame) on a control frame longer than 125 bytes; lws 4.3 refuses both with 1002
    // ("client unmasked", "illegal ctl length"). Known issues until the broker runs on
    // it: each test fails (its known issue no longer recorded) once that is fixed.
    @Test func anUnmaskedClientFrameIsAProtocolError() async throws {
        try await withServer { server in
            let text = Array(json(["op": "list", "ack": 1]).utf8)
            // A short read timeout: with lws 4.1.6 no close comes at all (the frame is served).
            let answer = try await Self.closeAnswer(
                server, to: [HTTPTestClient.frame(opcode: 0x1, payload: text, masked: false)], timeoutSeconds: 2)
            withKnownIssue("libwebsockets 4.1.6 accepts unmasked client frames (RFC 6455 §5.1)") {
                #expect(answer?.closeCode == 1002, "\(String(describing: answer))")
            }
            try await Self.expectServing(server)
        }
    }

    @Test func aPingLongerThan125BytesIsAProtocolError() async throws {
        try await withServer { server in
            let answer = try await Self.closeAnswer(server, to: [HTTPTestClient.frame(opcode: 0x9, payload: Array(repeating: 7, count: 126))])
            withKnownIssue("libwebsockets 4.1.6 drops the TCP connection without a close frame (RFC 6455 §5.5)") {
                #expect(answer?.closeCode == 1002, "\(String(describing: answer))")
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
