import HubServer
import HubTransport
import Testing

/// Authentication (PROTOCOL.md §2): `unauthorized` errors and close 4401.
@Suite("HubServer authentication")
struct ServerAuthTests {
    /// For the tests that send before the deadline: long enough that a loaded
    /// machine cannot make the deadline win the race.
    static let configuration = serviceConfiguration(
        session: SessionConfiguration(tokens: ["s3cret"], authenticationTimeout: .seconds(30)))

    /// For the test of the deadline itself: the client sends nothing, so load can only delay the close.
    static let shortDeadline = serviceConfiguration(
        session: SessionConfiguration(tokens: ["s3cret"], authenticationTimeout: .milliseconds(300)))

    @Test func noTokenWithinTheTimeoutIsUnauthorized() async throws {
        try await withServer(Self.shortDeadline) { server in
            let clock = ContinuousClock()
            let start = clock.now
            let client = try await server.connect()
            let error = try await client.next(timeout: .seconds(5))
            #expect(error["code"] == "unauthorized")
            #expect(error["id"] == nil && error["ack"] == nil)
            #expect(start.duration(to: clock.now) >= .milliseconds(295))
            #expect(try await client.expectClose().code == 4401)
        }
    }

    @Test func aWrongTokenInHelloIsUnauthorized() async throws {
        try await withServer(Self.configuration) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "hello", "token": "guess"]))
            #expect(try await client.next()["code"] == "unauthorized")
            #expect(try await client.expectClose().code == 4401)
        }
    }

    @Test func aBearerHeaderAuthenticates() async throws {
        try await withServer(Self.shortDeadline) { server in
            let client = try await server.connect(authorization: "Bearer s3cret")
            try await client.send(json(["op": "subscribe", "id": 1, "to": "s", "demand": 1]))
            #expect(try await client.next() == ["op": "subscribed", "id": 1, "kind": "subject"])
            // Authenticated at the upgrade: no deadline is armed (checked in virtual time by
            // SessionTimingTests), and nothing but the answers is queued.
            await client.expectNothing()
        }
    }

    @Test func aHelloTokenAuthenticatesAndStopsTheClock() async throws {
        try await withServer(Self.configuration) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "hello", "token": "s3cret", "client": "tests"]))
            try await client.send(json(["op": "list", "ack": 1]))
            #expect(try await client.next()["op"] == "catalog")
            // That the hello stops the deadline's clock is checked in virtual time (SessionTimingTests).
            await client.expectNothing()
        }
    }

    @Test func anyOtherMessageFirstIsUnauthorizedAndWhatFollowsIsIgnored() async throws {
        try await withServer(Self.configuration) { server in
            let client = try await server.connect()
            // Both in one write: the second arrives while the connection is closing.
            try await client.send(
                json(["op": "send", "to": "early", "value": 1, "ack": 1]),
                json(["op": "hello", "token": "s3cret"]),
                json(["op": "send", "to": "late", "value": 2, "ack": 2]))
            let error = try await client.next()
            #expect(error["code"] == "unauthorized")
            let close = try await client.expectClose()
            #expect(close.code == 4401)
            #expect(close.skipped.isEmpty)
            #expect(try await server.withHub { $0.entry(named: "early") == nil && $0.entry(named: "late") == nil })
        }
    }

    @Test func aWrongBearerHeaderIsUnauthorizedAtOnce() async throws {
        try await withServer(Self.configuration) { server in
            let client = try await server.connect(authorization: "Bearer guess")
            let clock = ContinuousClock()
            let start = clock.now
            #expect(try await client.next()["code"] == "unauthorized")
            #expect(try await client.expectClose().code == 4401)
            // The deadline is 30 s: closing well before it means the refusal did not wait for it.
            #expect(start.duration(to: clock.now) < .seconds(10), "it waited for the hello timeout")
        }
    }

    @Test(arguments: ["not json", #"{"op":"hello","token":5}"#, #"{"op":"dance"}"#])
    func anyUndecodableMessageBeforeAuthenticationIsUnauthorized(text: String) async throws {
        try await withServer(Self.configuration) { server in
            let client = try await server.connect()
            try await client.send(text)
            #expect(try await client.next()["code"] == "unauthorized")
            #expect(try await client.expectClose(timeout: .seconds(10)).code == 4401)
        }
    }

    @Test func aBinaryMessageBeforeAuthenticationIsUnauthorized() async throws {
        try await withServer(Self.configuration) { server in
            let client = try await server.connect()
            _ = try await client.withConnection { $0.send([1, 2, 3], kind: .binary) }
            #expect(try await client.next()["code"] == "unauthorized")
            #expect(try await client.expectClose(timeout: .seconds(10)).code == 4401)
        }
    }

    @Test func withoutTokensConfiguredTokensAreIgnored() async throws {
        try await withServer { server in
            let client = try await server.connect(authorization: "Bearer whatever")
            try await client.send(json(["op": "hello", "token": "anything"]), json(["op": "list", "ack": 1]))
            #expect(try await client.next()["op"] == "catalog")
        }
    }
}
