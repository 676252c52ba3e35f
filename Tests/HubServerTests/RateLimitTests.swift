import HubServer
import HubValue
import Testing

/// Per-connection rate limits (`limits.perConnection.messagesPerSecond`,
/// `bytesPerSecond`): a client over either gets `limit_exceeded` naming the limit and is
/// closed with 4429, while the other clients go on being served.
@Suite("HubServer rate limits")
struct RateLimitTests {
    static func configuration(_ rates: InboundRateLimits) -> HubService.Configuration {
        var session = SessionConfiguration()
        session.inboundRate = rates
        return serviceConfiguration(session: session)
    }

    /// Sends `messages` at once on a fresh connection and reads until the close: the acks
    /// that came before, the error, the close code.
    static func flood(_ server: HubServerHarness, _ messages: [String]) async throws -> (acks: Int, error: Value?, code: UInt16?) {
        let client = try await server.connect()
        try await client.send(messages)
        var acks = 0
        while true {
            let message = try await client.next()
            if message["op"] == "ack" { acks += 1; continue }
            let close = try await client.expectClose()
            return (acks, message, close.code)
        }
    }

    @Test func aClientSendingMoreMessagesASecondIsClosedWith4429() async throws {
        try await withServer(Self.configuration(InboundRateLimits(messagesPerSecond: 20))) { server in
            let bystander = try await server.connect()
            try await bystander.send(json(["op": "subscribe", "id": 1, "to": "prices", "demand": 1000]))
            #expect(try await bystander.next()["op"] == "subscribed")
            // 500 messages in one burst: about 20 (one second's worth, plus what the
            // time taken refilled) pass, the next one is refused.
            let sends = (0..<500).map { json(["op": "send", "to": "prices", "value": .int(Int64($0)), "ack": .int(Int64($0))]) }
            let (acks, error, code) = try await Self.flood(server, sends)
            #expect(acks >= 20 && acks < 500, "\(acks) acks")
            #expect(error?["op"] == "error" && error?["code"] == "limit_exceeded", "\(String(describing: error))")
            #expect(error?["data"] == ["limit": "messagesPerSecond", "value": 20])
            #expect(code == 4429)
            // The bystander got exactly the values that were acked, and is still served.
            #expect(try await bystander.values(acks, id: 1) == (0..<acks).map { .int(Int64($0)) })
            try await bystander.send(json(["op": "list", "ack": 1]))
            #expect(try await bystander.next()["op"] == "catalog")
        }
    }

    @Test func aClientSendingMoreBytesASecondIsClosedWith4429() async throws {
        try await withServer(Self.configuration(InboundRateLimits(bytesPerSecond: 5_000))) { server in
            let value = Value.string(String(repeating: "x", count: 1000))
            let sends = (0..<60).map { json(["op": "send", "to": "blob", "value": value, "ack": .int(Int64($0))]) }
            let (acks, error, code) = try await Self.flood(server, sends)
            #expect(acks >= 4 && acks < 60, "\(acks) acks")
            #expect(error?["data"] == ["limit": "bytesPerSecond", "value": 5_000], "\(String(describing: error))")
            #expect(error?["message"]?.stringValue?.contains("more than 5000 bytes a second") == true)
            #expect(code == 4429)
        }
    }

    @Test func aClientWithinItsRatesIsNotLimited() async throws {
        try await withServer(Self.configuration(InboundRateLimits(messagesPerSecond: 100, bytesPerSecond: 1 << 20))) { server in
            let client = try await server.connect()
            let sends = (0..<50).map { json(["op": "send", "to": "s", "value": .int(Int64($0)), "ack": .int(Int64($0))]) }
            try await client.send(sends)
            #expect(try await client.next(50).allSatisfy { $0["op"] == "ack" })
        }
    }

    /// The buckets themselves, on an explicit clock: one second's worth of burst, then the
    /// rate; a large message passes while the bucket is not empty and is paid for later.
    @Test func theBucketsRefillAtTheirRate() {
        let second: Int64 = 1_000_000_000
        var messages = InboundRateLimiter(limits: InboundRateLimits(messagesPerSecond: 10), now: 0)
        for _ in 0..<10 { #expect(messages.admit(bytes: 1, now: 0) == nil) }
        #expect(messages.admit(bytes: 1, now: 0)! == ("messagesPerSecond", 10))
        #expect(messages.admit(bytes: 1, now: second / 20)! == ("messagesPerSecond", 10))  // half a token
        #expect(messages.admit(bytes: 1, now: second / 10) == nil)  // one token
        #expect(messages.admit(bytes: 1, now: second / 10) != nil)
        // Idle for long: the bucket holds one second's worth, not more.
        for _ in 0..<10 { #expect(messages.admit(bytes: 1, now: 100 * second) == nil) }
        #expect(messages.admit(bytes: 1, now: 100 * second) != nil)

        var bytes = InboundRateLimiter(limits: InboundRateLimits(bytesPerSecond: 1000), now: 0)
        #expect(bytes.admit(bytes: 5000, now: 0) == nil)  // larger than a second's worth: let through, owed
        #expect(bytes.admit(bytes: 1, now: 2 * second)! == ("bytesPerSecond", 1000))  // still 2000 owed
        #expect(bytes.admit(bytes: 1, now: 4 * second + 1_000_000) == nil)
    }
}
