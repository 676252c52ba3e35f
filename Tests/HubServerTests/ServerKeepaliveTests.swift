import Foundation
import HubServer
import NetworkTestSupport
import Testing

/// The server's keepalive over a raw socket: a silent client is pinged, then hung up on
/// after the idle timeout; a pong, or any message, counts as being heard.
@Suite("Server keepalive")
struct ServerKeepaliveTests {
    private static func configuration(pingInterval: UInt16, idleTimeout: UInt16) -> HubService.Configuration {
        var configuration = HubService.Configuration()
        configuration.pingInterval = pingInterval
        configuration.idleTimeout = idleTimeout
        return configuration
    }

    private static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private static let list = HTTPTestClient.frame(opcode: 0x1, payload: Array(#"{"op":"list","ack":1}"#.utf8))

    @Test func aSilentClientIsPingedThenHungUpOn() async throws {
        try await withServer(Self.configuration(pingInterval: 1, idleTimeout: 3)) { server in
            let client = try await WebSocketConformanceTests.upgraded(server, timeoutSeconds: 15)
            let (opcodes, seconds) = await Blocking.run { () -> ([UInt8], Double) in
                let start = ContinuousClock.now
                var opcodes: [UInt8] = []
                while let frame = client.readFrame() { opcodes.append(frame.opcode) }
                return (opcodes, Self.seconds(since: start))
            }
            // Pings after one and two silent seconds, then the hang-up (no close handshake
            // with a peer that answers nothing).
            #expect(opcodes.filter { $0 == 0x9 }.count >= 1, "frames: \(opcodes)")
            #expect(!opcodes.contains(0x8), "frames: \(opcodes)")
            #expect(seconds < 12, "the server closed the connection (not the read timeout) after \(seconds) s")
            try await WebSocketConformanceTests.expectServing(server)
        }
    }

    @Test func aClientThatAnswersPingsStaysOpenPastTheIdleTimeout() async throws {
        // A pong has three seconds to arrive (a ping after one silent second, the hang-up
        // after four), room for a loaded machine: with two, a full parallel run on a busy
        // two-core host was hung up on.
        try await withServer(Self.configuration(pingInterval: 1, idleTimeout: 4)) { server in
            let client = try await WebSocketConformanceTests.upgraded(server, timeoutSeconds: 15)
            let (pings, answered) = try await Blocking.run { () throws -> (Int, Bool) in
                let start = ContinuousClock.now
                var pings = 0
                // Twice the idle timeout and more, answering every ping and nothing else.
                while Self.seconds(since: start) < 9 {
                    guard let frame = client.readFrame() else { return (pings, false) }
                    if frame.opcode == 0x9 {
                        pings += 1
                        // RFC 6455 §5.5.3: the pong carries the ping's payload.
                        try client.write(HTTPTestClient.frame(opcode: 0xA, payload: frame.payload))
                    }
                }
                try client.write(Self.list)
                while let frame = client.readFrame() {
                    if frame.opcode == 0x9 { try client.write(HTTPTestClient.frame(opcode: 0xA, payload: frame.payload)) }
                    if frame.opcode == 0x1, String(decoding: frame.payload, as: UTF8.self).contains("catalog") {
                        return (pings, true)
                    }
                }
                return (pings, false)
            }
            #expect(pings >= 2)
            #expect(answered, "the connection was open and served after \(pings) pings")
        }
    }

    @Test func messagesCountAsBeingHeard() async throws {
        // Five seconds of idle timeout against a request every 250 ms: with three, a full
        // parallel run on a busy two-core host was hung up on.
        try await withServer(Self.configuration(pingInterval: 1, idleTimeout: 5)) { server in
            let client = try await WebSocketConformanceTests.upgraded(server, timeoutSeconds: 15)
            let answers = try await Blocking.run { () throws -> Int in
                let start = ContinuousClock.now
                var answers = 0
                // Requests every 250 ms for longer than the idle timeout; pings go unanswered.
                while Self.seconds(since: start) < 7 {
                    try client.write(Self.list)
                    while let frame = client.readFrame() {
                        if frame.opcode == 0x1, String(decoding: frame.payload, as: UTF8.self).contains("catalog") {
                            answers += 1
                            break
                        }
                    }
                    Thread.sleep(forTimeInterval: 0.25)
                }
                return answers
            }
            #expect(answers >= 10)
            try await Blocking.run { try client.write(Self.list) }
            let last = await Blocking.run { () -> Bool in
                while let frame = client.readFrame() {
                    if frame.opcode == 0x1, String(decoding: frame.payload, as: UTF8.self).contains("catalog") { return true }
                }
                return false
            }
            #expect(last, "still open")
        }
    }
}
