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
    /// second, the hang-up after four): an attempt in which the client itself went 3.5 s
    /// without writing proves nothing (``conclusiveAttempt(idleTimeout:inconclusiveSilence:_:)``).
    @Test func aClientThatAnswersPingsStaysOpenPastTheIdleTimeout() async throws {
        let pings = try await Self.conclusiveAttempt(idleTimeout: 4, inconclusiveSilence: 3.5) { client, writer in
            var pings = 0
            let start = ContinuousClock.now
            // Twice the idle timeout and more, answering every ping and nothing else.
            while Self.seconds(since: start) < 9 {
                guard let frame = client.readFrame() else { return (pings, "the connection ended after \(pings) pings") }
                if frame.opcode == 0x9 {
                    pings += 1
                    // RFC 6455 §5.5.3: the pong carries the ping's payload.
                    try writer.write(HTTPTestClient.frame(opcode: 0xA, payload: frame.payload))
                }
            }
            try writer.write(Self.list)
            while let frame = client.readFrame() {
                if frame.opcode == 0x9 { try writer.write(HTTPTestClient.frame(opcode: 0xA, payload: frame.payload)) }
                if Self.isCatalog(frame) { return (pings, nil) }
            }
            return (pings, "no answer after \(pings) pings: not open")
        }
        if let pings { #expect(pings >= 2) }
    }

    /// Requests every 250 ms for 7 s against a 5-s idle timeout keep the connection
    /// open (pings go unanswered: only the requests are heard). An attempt in which the
    /// client itself went 4 s without writing proves nothing.
    @Test func messagesCountAsBeingHeard() async throws {
        let answers = try await Self.conclusiveAttempt(idleTimeout: 5, inconclusiveSilence: 4) { client, writer in
            var answers = 0
            func answered() -> Bool {
                while let frame = client.readFrame() {
                    if Self.isCatalog(frame) { return true }
                }
                return false
            }
            let start = ContinuousClock.now
            while Self.seconds(since: start) < 7 {
                try writer.write(Self.list)
                guard answered() else { return (answers, "the connection ended after \(answers) answers") }
                answers += 1
                Thread.sleep(forTimeInterval: 0.25)
            }
            try writer.write(Self.list)
            return (answers, answered() ? nil : "no answer after \(answers) answers: not open")
        }
        if let answers { #expect(answers >= 10) }
    }

    private static func isCatalog(_ frame: HTTPTestClient.Frame) -> Bool {
        frame.opcode == 0x1 && String(decoding: frame.payload, as: UTF8.self).contains("catalog")
    }

    /// Writes a client's frames and keeps its longest silence: the longest time the
    /// server heard nothing from it, from the upgrade request on. Used on one thread.
    private final class SilenceKeepingWriter: @unchecked Sendable {
        let client: HTTPTestClient
        private var lastWrite: ContinuousClock.Instant
        private(set) var longestSilence = 0.0

        init(client: HTTPTestClient, heardAt: ContinuousClock.Instant) {
            self.client = client
            lastWrite = heardAt
        }

        func write(_ frame: [UInt8]) throws {
            longestSilence = max(longestSilence, ServerKeepaliveTests.seconds(since: lastWrite))
            try client.write(frame)
            lastWrite = ContinuousClock.now
        }

        /// The longest silence, counting the one still going on.
        var longestSilenceSoFar: Double { max(longestSilence, ServerKeepaliveTests.seconds(since: lastWrite)) }
    }

    /// Runs `exchange` (on a thread of its own, on a fresh connection to a fresh server
    /// with a one-second ping interval and `idleTimeout`) until one attempt concludes,
    /// three at most, and returns what it counted; `nil` after recording an issue.
    ///
    /// `exchange` returns its count and, if the connection did not stay open, why. A
    /// failure after the client itself was silent for `inconclusiveSilence` seconds or
    /// more (its thread starved on a busy host: a full parallel run on two loaded cores
    /// did it) proves nothing either way, and the attempt runs again; a failure after a
    /// shorter silence is the server's, and fails the test.
    private static func conclusiveAttempt(
        idleTimeout: UInt16, inconclusiveSilence: Double,
        _ exchange: @escaping @Sendable (HTTPTestClient, SilenceKeepingWriter) throws -> (Int, String?)
    ) async throws -> Int? {
        var inconclusive: [String] = []
        for _ in 0..<3 {
            var outcome: (count: Int, longestSilence: Double, failure: String?) = (0, 0, nil)
            try await withServer(Self.configuration(pingInterval: 1, idleTimeout: idleTimeout)) { server in
                outcome = await Blocking.run { () -> (Int, Double, String?) in
                    // The upgrade request is the last the server hears before the exchange: the
                    // silence counts from the moment it is sent, on the thread that then goes on
                    // (a starved thread or task after the upgrade is the client's silence).
                    let sent = ContinuousClock.now
                    let client: HTTPTestClient
                    do {
                        client = try HTTPTestClient(port: server.port, timeoutSeconds: 15)
                        let answer = try client.upgrade()
                        guard answer.status == 101 else { return (0, 0, "upgrade: \(answer.status)") }
                    } catch {
                        return (0, Self.seconds(since: sent), "upgrade: \(error)")
                    }
                    let writer = SilenceKeepingWriter(client: client, heardAt: sent)
                    do {
                        let (count, failure) = try exchange(client, writer)
                        return (count, failure == nil ? writer.longestSilence : writer.longestSilenceSoFar, failure)
                    } catch {
                        return (0, writer.longestSilenceSoFar, "\(error)")
                    }
                }
            }
            guard let failure = outcome.failure else { return outcome.count }
            if outcome.longestSilence < inconclusiveSilence {
                Issue.record("hung up on although the longest silence was \(outcome.longestSilence) s: \(failure)")
                return nil
            }
            inconclusive.append("\(failure) (silent for \(outcome.longestSilence) s)")
        }
        Issue.record("three attempts in which the client itself fell silent: \(inconclusive)")
        return nil
    }
}
