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

    /// A client that answers every ping and sends nothing else stays open past twice
    /// the idle timeout. A pong has three seconds to arrive (a ping after one silent
    /// second, the hang-up after four). An attempt in which the client itself went 3.5 s
    /// without writing (its thread starved on a busy host) proves nothing either way and
    /// runs again, three times at most; a hang-up after a shorter silence fails the test.
    @Test func aClientThatAnswersPingsStaysOpenPastTheIdleTimeout() async throws {
        var inconclusive: [String] = []
        for _ in 0..<3 {
            var outcome: (pings: Int, longestSilence: Double, failure: String?) = (0, 0, nil)
            try await withServer(Self.configuration(pingInterval: 1, idleTimeout: 4)) { server in
                let client = try await WebSocketConformanceTests.upgraded(server, timeoutSeconds: 15)
                // The upgrade request is the last the server heard: the silence counts from it
                // (the test's task may resume seconds later in a busy parallel run).
                let upgradedAt = ContinuousClock.now
                outcome = await Blocking.run { () -> (Int, Double, String?) in
                    let start = ContinuousClock.now
                    var lastWrite = upgradedAt
                    var longest = 0.0
                    var pings = 0
                    func write(_ frame: [UInt8]) throws {
                        longest = max(longest, Self.seconds(since: lastWrite))
                        try client.write(frame)
                        lastWrite = ContinuousClock.now
                    }
                    do {
                        // Twice the idle timeout and more, answering every ping and nothing else.
                        while Self.seconds(since: start) < 9 {
                            guard let frame = client.readFrame() else {
                                return (pings, max(longest, Self.seconds(since: lastWrite)), "the connection ended after \(pings) pings")
                            }
                            if frame.opcode == 0x9 {
                                pings += 1
                                // RFC 6455 §5.5.3: the pong carries the ping's payload.
                                try write(HTTPTestClient.frame(opcode: 0xA, payload: frame.payload))
                            }
                        }
                        try write(Self.list)
                        while let frame = client.readFrame() {
                            if frame.opcode == 0x9 { try write(HTTPTestClient.frame(opcode: 0xA, payload: frame.payload)) }
                            if frame.opcode == 0x1, String(decoding: frame.payload, as: UTF8.self).contains("catalog") {
                                return (pings, longest, nil)
                            }
                        }
                        return (pings, longest, "no answer after \(pings) pings: not open")
                    } catch {
                        return (pings, max(longest, Self.seconds(since: lastWrite)), "\(error) after \(pings) pings")
                    }
                }
            }
            guard let failure = outcome.failure else {
                #expect(outcome.pings >= 2)
                return
            }
            if outcome.longestSilence < 3.5 {
                Issue.record("hung up on although the longest silence was \(outcome.longestSilence) s: \(failure)")
                return
            }
            inconclusive.append("\(failure) (silent for \(outcome.longestSilence) s)")
        }
        Issue.record("three attempts in which the client itself fell silent: \(inconclusive)")
    }

    /// Requests every 250 ms for 7 s against a 5-s idle timeout keep the connection
    /// open. An attempt in which the client itself went 4 s without writing (its thread
    /// starved on a busy host: a full parallel run on two loaded cores did it) proves
    /// nothing either way and runs again, three times at most; a hang-up after a
    /// shorter silence fails the test.
    @Test func messagesCountAsBeingHeard() async throws {
        var inconclusive: [String] = []
        for _ in 0..<3 {
            var outcome: (answers: Int, longestSilence: Double, failure: String?) = (0, 0, nil)
            try await withServer(Self.configuration(pingInterval: 1, idleTimeout: 5)) { server in
                let client = try await WebSocketConformanceTests.upgraded(server, timeoutSeconds: 15)
                // The upgrade request is the last the server heard: the silence counts from it
                // (the test's task may resume seconds later in a busy parallel run).
                let upgradedAt = ContinuousClock.now
                outcome = await Blocking.run { () -> (Int, Double, String?) in
                    let start = ContinuousClock.now
                    var lastWrite = upgradedAt
                    var longest = 0.0
                    var answers = 0
                    func request() throws {
                        longest = max(longest, Self.seconds(since: lastWrite))
                        try client.write(Self.list)
                        lastWrite = ContinuousClock.now
                    }
                    func answered() -> Bool {
                        while let frame = client.readFrame() {
                            if frame.opcode == 0x1, String(decoding: frame.payload, as: UTF8.self).contains("catalog") {
                                return true
                            }
                        }
                        return false
                    }
                    do {
                        // Pings go unanswered: only the requests are heard.
                        while Self.seconds(since: start) < 7 {
                            try request()
                            guard answered() else { return (answers, longest, "the connection ended after \(answers) answers") }
                            answers += 1
                            Thread.sleep(forTimeInterval: 0.25)
                        }
                        try request()
                        return (answers, longest, answered() ? nil : "no answer after \(answers) answers: not open")
                    } catch {
                        return (answers, max(longest, Self.seconds(since: lastWrite)), "\(error) after \(answers) answers")
                    }
                }
            }
            guard let failure = outcome.failure else {
                #expect(outcome.answers >= 10)
                return
            }
            if outcome.longestSilence < 4 {
                Issue.record("hung up on although the longest silence was \(outcome.longestSilence) s: \(failure)")
                return
            }
            inconclusive.append("\(failure) (silent for \(outcome.longestSilence) s)")
        }
        Issue.record("three attempts in which the client itself fell silent: \(inconclusive)")
    }
}
