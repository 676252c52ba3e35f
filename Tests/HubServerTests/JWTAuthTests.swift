import Foundation
import HubRegistry
import HubServer
import HubValue
import NetworkTestSupport
import Testing

/// JSON Web Tokens over real sockets: HS256, ES256 and RS256 keys from configuration;
/// `exp`, `nbf`, `aud` checked; permissions from the token's `hub` claim or from the
/// identity its subject belongs to; a token that expires ends its connection with 4401
/// unless a new `hello` refreshes it.
@Suite("HubServer JWT", .enabled(if: TestCertificate.opensslAvailable, "needs the openssl command line for the test keys"))
struct JWTAuthTests {
    static let keys: Task<JWTTestKeys, any Error> = Task { try await JWTTestKeys.make() }

    static func configuration(_ keys: JWTTestKeys, leeway: Duration = .seconds(30)) throws -> HubService.Configuration {
        var session = SessionConfiguration(authenticationTimeout: .seconds(30))
        session.auth = AuthConfiguration(
            identities: [AuthConfiguration.IdentityConfiguration(
                identity: Identity(name: "dashboard", permissions: try Permissions(json: ["subscribe": ["prices.*"]])),
                jwtSubjects: ["alice"])],
            jwt: keys.configuration(leeway: leeway))
        return serviceConfiguration(session: session)
    }

    /// Claims for `subject` valid for `seconds`, for audience `hub`, with `permissions` as the `hub` claim.
    static func claims(_ subject: String, seconds: Double = 300, permissions: Value? = nil, audience: Value = "hub") -> Value {
        var members: Value.Object = ["sub": .string(subject), "exp": .double((JWTTestKeys.now + seconds).rounded()), "aud": audience]
        if let permissions { members["hub"] = permissions }
        return .object(members)
    }

    static let everyOperation: Value = [
        "subscribe": ["prices.*"], "publish": ["prices.*"], "trigger": ["refresh"], "pipelines": ["prices.*"],
        "admin": ["$sys.stats"], "deny": ["publish": ["prices.locked"]],
    ]

    static func ask(_ client: TestClient, _ message: Value) async throws -> Value {
        try await client.send(message)
        return try await client.next()
    }

    @Test func theHubClaimGovernsEveryOperation() async throws {
        let keys = try await Self.keys.value
        try await withServer(try Self.configuration(keys)) { server in
            let token = try keys.token(Self.claims("bob", permissions: Self.everyOperation), with: keys.hs256)
            let client = try await server.connect()
            try await client.send(json(["op": "hello", "token": .string(token)]))
            #expect(try await Self.ask(client, ["op": "subscribe", "id": 1, "to": "prices.A", "demand": 5])["op"] == "subscribed")
            #expect(try await Self.ask(client, ["op": "send", "to": "prices.A", "value": 1, "ack": 1]) == ["op": "ack", "ack": 1])
            #expect(try await client.values(1, id: 1) == [1])
            #expect(try await Self.ask(client, ["op": "trigger", "name": "refresh", "ack": 2]) == ["op": "ack", "ack": 2])
            #expect(try await Self.ask(client, ["op": "subscribe", "id": 2, "pipeline": "prices.A | map(. + 1)", "demand": 1])["op"] == "subscribed")
            #expect(try await Self.ask(client, ["op": "subscribe", "id": 3, "to": "$sys.stats", "demand": 1])["op"] == "subscribed")
            let refusals: [(Value, String, String)] = [
                (["op": "subscribe", "id": 4, "to": "orders", "demand": 1], "orders", "subscribe"),
                (["op": "send", "to": "orders", "value": 1, "ack": 3], "orders", "publish"),
                (["op": "send", "to": "prices.locked", "value": 1, "ack": 4], "prices.locked", "publish"),
                (["op": "complete", "to": "orders", "ack": 5], "orders", "publish"),
                (["op": "fail", "to": "orders", "error": 1, "ack": 6], "orders", "publish"),
                (["op": "delete", "name": "orders", "ack": 7], "orders", "publish"),
                (["op": "trigger", "name": "rebalance", "ack": 8], "rebalance", "trigger"),
                (["op": "subscribe", "id": 5, "pipeline": "merge(prices.A, orders)", "demand": 1], "orders", "subscribe"),
                (["op": "subscribe", "id": 6, "to": "$sys.connections", "demand": 1], "$sys.connections", "admin"),
            ]
            for (message, name, permission) in refusals {
                var answer = try await Self.ask(client, message)
                while answer["op"] == "next" { answer = try await client.next() }
                #expect(answer["code"] == "forbidden", "\(message): \(answer)")
                #expect(answer["data"]?["name"] == .string(name), "\(message): \(answer)")
                #expect(answer["data"]?["permission"] == .string(permission), "\(message): \(answer)")
            }
        }
    }

    @Test func es256AndRS256KeysAuthenticateByHeaderAndHello() async throws {
        let keys = try await Self.keys.value
        try await withServer(try Self.configuration(keys)) { server in
            let permissions: Value = ["subscribe": ["prices.*"]]
            let es = try keys.token(Self.claims("carol", permissions: permissions), with: keys.es256, kid: "es-1")
            let byHeader = try await server.connect(authorization: "Bearer \(es)")
            #expect(try await Self.ask(byHeader, ["op": "subscribe", "id": 1, "to": "prices.A", "demand": 1])["op"] == "subscribed")
            let rs = try keys.token(Self.claims("dave", permissions: permissions, audience: ["other", "hub"]), with: keys.rs256)
            let byHello = try await server.connect()
            try await byHello.send(json(["op": "hello", "token": .string(rs)]))
            #expect(try await Self.ask(byHello, ["op": "subscribe", "id": 1, "to": "prices.A", "demand": 1])["op"] == "subscribed")
            #expect(try await Self.ask(byHello, ["op": "subscribe", "id": 2, "to": "orders", "demand": 1])["code"] == "forbidden")
        }
    }

    @Test func aSubjectWithoutClaimsIsItsConfiguredIdentity() async throws {
        let keys = try await Self.keys.value
        try await withServer(try Self.configuration(keys)) { server in
            let alice = try await server.connect()
            try await alice.send(json(["op": "hello", "token": .string(try keys.token(Self.claims("alice"), with: keys.hs256))]))
            #expect(try await Self.ask(alice, ["op": "subscribe", "id": 1, "to": "prices.A", "demand": 1])["op"] == "subscribed")
            #expect(try await Self.ask(alice, ["op": "send", "to": "prices.A", "value": 1, "ack": 1])["code"] == "forbidden")
            let bob = try await server.connect()
            try await bob.send(json(["op": "hello", "token": .string(try keys.token(Self.claims("bob"), with: keys.hs256))]))
            let refused = try await bob.next()
            #expect(refused["code"] == "unauthorized")
            #expect(refused["message"]?.stringValue?.contains("subject 'bob' has no permissions") == true)
            #expect(try await bob.expectClose().code == 4401)
        }
    }

    @Test func invalidTokensAreUnauthorizedWithTheReason() async throws {
        let keys = try await Self.keys.value
        try await withServer(try Self.configuration(keys)) { server in
            let permissions: Value = ["subscribe": ["x"]]
            let valid = Self.claims("eve", permissions: permissions)
            let header: Value = ["alg": "HS256", "typ": "JWT"]
            var cases: [(String, String)] = [
                (try keys.token(Self.claims("eve", seconds: -100, permissions: permissions), with: keys.hs256), "expired"),
                (try keys.token(.object((valid.objectValue ?? [:]).merging(["nbf": .double(JWTTestKeys.now + 300)]) { $1 }), with: keys.hs256), "not valid yet"),
                (try keys.token(Self.claims("eve", permissions: permissions, audience: "elsewhere"), with: keys.hs256), "audience"),
                (try keys.token(.object((valid.objectValue ?? [:]).filter { $0.key != "aud" }), with: keys.hs256), "audience"),
                (try keys.token(.object((valid.objectValue ?? [:]).filter { $0.key != "sub" }), with: keys.hs256), "no subject"),
                (try JWTTestKeys.token(valid, header: header, signer: nil, signature: Array(repeating: 7, count: 32)), "signature does not verify"),
                (try JWTTestKeys.token(valid, header: ["alg": "none"], signer: nil), "no key for algorithm none"),
                (try keys.token(valid, with: keys.es256, kid: "unknown"), "no key 'unknown' for algorithm ES256"),
                (try keys.token(Self.claims("eve", permissions: ["subscibe": ["x"]]), with: keys.hs256), "unknown permission 'subscibe'"),
                ("a.b.c", "header is not base64url JSON"),
                ("not-a-token", "not accepted"),
            ]
            // Algorithm confusion: an HS256 token whose secret is the RSA public key.
            let confused = try await JWTTestKeys.hmacSigner(keys.rsaPublicPEM)
            cases.append((try JWTTestKeys.token(valid, header: header, signer: confused), "signature does not verify"))
            for (token, reason) in cases {
                let client = try await server.connect()
                try await client.send(json(["op": "hello", "token": .string(token)]))
                let refused = try await client.next()
                #expect(refused["code"] == "unauthorized", "\(reason): \(refused)")
                #expect(refused["message"]?.stringValue?.contains(reason) == true, "\(reason): \(refused)")
                #expect(try await client.expectClose().code == 4401)
            }
        }
    }

    @Test func anExpiringTokenEndsTheConnectionWith4401() async throws {
        let keys = try await Self.keys.value
        try await withServer(try Self.configuration(keys, leeway: .zero)) { server in
            let client = try await server.connect()
            // The token is made once connected (a loaded machine may take seconds to
            // connect) and sent with the request at once.
            let expiry = JWTTestKeys.now + 3
            let claims: Value = ["sub": "alice", "exp": .double(expiry), "aud": "hub"]
            try await client.send(
                json(["op": "hello", "token": .string(try keys.token(claims, with: keys.hs256))]),
                json(["op": "subscribe", "id": 1, "to": "prices.A", "demand": 1]))
            #expect(try await client.next()["op"] == "subscribed")
            let error = try await client.next(timeout: .seconds(30))
            #expect(error["code"] == "unauthorized")
            #expect(error["message"]?.stringValue?.contains("the token has expired: send a hello") == true, "\(error)")
            #expect(try await client.expectClose().code == 4401)
            #expect(JWTTestKeys.now >= expiry - 0.01)
        }
    }

    @Test func aNewHelloRefreshesTheTokenOfTheSameIdentityOnly() async throws {
        let keys = try await Self.keys.value
        try await withServer(try Self.configuration(keys, leeway: .zero)) { server in
            let client = try await server.connect()
            let first = JWTTestKeys.now + 2.5
            let second = first + 2.5
            try await client.send(
                json(["op": "hello", "token": .string(try keys.token(["sub": "alice", "exp": .double(first), "aud": "hub"], with: keys.hs256))]),
                json(["op": "hello", "token": .string(try keys.token(["sub": "alice", "exp": .double(second), "aud": "hub"], with: keys.hs256))]),
                json(["op": "list", "ack": 1]))
            #expect(try await client.next()["op"] == "catalog")
            // The close comes at the second token's expiry, not the first's.
            let error = try await client.next(timeout: .seconds(30))
            #expect(error["message"]?.stringValue?.contains("the token has expired: send a hello") == true, "\(error)")
            #expect(try await client.expectClose().code == 4401)
            #expect(JWTTestKeys.now >= second - 0.01)

            // A refresh as someone else is refused.
            let other = try await server.connect()
            try await other.send(
                json(["op": "hello", "token": .string(try keys.token(Self.claims("alice"), with: keys.hs256))]),
                json(["op": "hello", "token": .string(try keys.token(Self.claims("zed", permissions: ["subscribe": [">"]]), with: keys.hs256))]))
            let refused = try await other.next()
            #expect(refused["code"] == "unauthorized")
            #expect(refused["message"]?.stringValue?.contains("the same identity") == true)
            #expect(try await other.expectClose().code == 4401)
        }
    }
}

