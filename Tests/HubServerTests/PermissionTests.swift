import HubRegistry
import NetworkTestSupport
import HubServer
import HubTransport
import HubValue
import Testing

/// Identities and permissions (configuration `auth.identities`) over real sockets: every
/// operation allowed where a pattern allows it and `forbidden`, naming the name, where
/// none does or a deny rule matches.
@Suite("HubServer permissions")
struct PermissionTests {
    static func identity(
        _ name: String, tokens: [String], maxConnections: Int? = nil, _ permissions: Value
    ) throws -> AuthConfiguration.IdentityConfiguration {
        AuthConfiguration.IdentityConfiguration(
            identity: Identity(name: name, permissions: try Permissions(json: permissions), maxConnections: maxConnections),
            tokens: tokens)
    }

    static func configuration() throws -> HubService.Configuration {
        var session = SessionConfiguration(tokens: ["root-secret"], authenticationTimeout: .seconds(30))
        session.auth = AuthConfiguration(identities: [
            try identity("reader", tokens: ["reader-secret"], maxConnections: 3, [
                "subscribe": ["prices.*", "orders.>", "refresh", "view"],
                "pipelines": ["prices.*"],
                "deny": ["subscribe": ["orders.secret.>"]],
            ]),
            try identity("writer", tokens: ["writer-secret"], [
                "publish": ["prices.*"], "trigger": ["refresh"], "deny": ["publish": ["prices.locked"]],
            ]),
            try identity("operator", tokens: ["operator-secret"], ["subscribe": [">"], "admin": [">"]]),
        ])
        return serviceConfiguration(session: session)
    }

    /// A connection authenticated with `token` (in `hello`).
    static func connect(_ server: HubServerHarness, _ token: String) async throws -> TestClient {
        let client = try await server.connect()
        try await client.send(json(["op": "hello", "token": .string(token)]))
        return client
    }

    /// The answer to one acked request.
    static func ask(_ client: TestClient, _ message: Value) async throws -> Value {
        try await client.send(message)
        return try await client.next()
    }

    static func expectForbidden(
        _ answer: Value, name: String, permission: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(answer["op"] == "error", "\(answer)", sourceLocation: sourceLocation)
        #expect(answer["code"] == "forbidden", "\(answer)", sourceLocation: sourceLocation)
        #expect(answer["data"]?["name"] == .string(name), "\(answer)", sourceLocation: sourceLocation)
        #expect(answer["data"]?["permission"] == .string(permission), "\(answer)", sourceLocation: sourceLocation)
        #expect(answer["message"]?.stringValue?.contains("'\(name)'") == true, "\(answer)", sourceLocation: sourceLocation)
    }

    @Test func aReaderSubscribesWhereAllowedAndIsForbiddenEverythingElse() async throws {
        try await withServer(try Self.configuration()) { server in
            let reader = try await Self.connect(server, "reader-secret")
            #expect(try await Self.ask(reader, ["op": "subscribe", "id": 1, "to": "prices.AAPL", "demand": 1])
                == ["op": "subscribed", "id": 1, "kind": "subject"])
            #expect(try await Self.ask(reader, ["op": "subscribe", "id": 2, "to": "orders.eu.paid", "demand": 1])["op"] == "subscribed")
            #expect(try await Self.ask(reader, ["op": "subscribe", "id": 3, "to": "refresh", "demand": 1])["op"] == "subscribed")
            var answer = try await Self.ask(reader, ["op": "subscribe", "id": 4, "to": "orders.secret.plan", "demand": 1])
            Self.expectForbidden(answer, name: "orders.secret.plan", permission: "subscribe")
            #expect(answer["id"] == 4)
            answer = try await Self.ask(reader, ["op": "subscribe", "id": 5, "to": "prices", "demand": 1])
            Self.expectForbidden(answer, name: "prices", permission: "subscribe")
            // Every write is forbidden: a read-only dashboard could once complete prices.
            let writes: [(Value, String)] = [
                (["op": "send", "to": "prices.AAPL", "value": 1, "ack": 10], "send to"),
                (["op": "complete", "to": "prices.AAPL", "ack": 11], "complete"),
                (["op": "fail", "to": "prices.AAPL", "error": "x", "ack": 12], "fail"),
                (["op": "delete", "name": "prices.AAPL", "ack": 13], "delete"),
            ]
            for (message, doing) in writes {
                let refused = try await Self.ask(reader, message)
                Self.expectForbidden(refused, name: "prices.AAPL", permission: "publish")
                #expect(refused["ack"] == message["ack"])
                #expect(refused["message"]?.stringValue?.hasPrefix("not allowed to \(doing) 'prices.AAPL'") == true)
            }
            answer = try await Self.ask(reader, ["op": "trigger", "name": "refresh", "ack": 14])
            Self.expectForbidden(answer, name: "refresh", permission: "trigger")
            // Without an ack, a refusal is still reported (connection-level).
            try await reader.send(json(["op": "send", "to": "prices.AAPL", "value": 1]))
            Self.expectForbidden(try await reader.next(), name: "prices.AAPL", permission: "publish")
            // The subject is still open and the reader's subscription still live: a writer's value arrives.
            let writer = try await Self.connect(server, "writer-secret")
            #expect(try await Self.ask(writer, ["op": "send", "to": "prices.AAPL", "value": 42, "ack": 1]) == ["op": "ack", "ack": 1])
            #expect(try await reader.values(1, id: 1) == [42])
        }
    }

    @Test func aWriterPublishesAndTriggersWhereAllowed() async throws {
        try await withServer(try Self.configuration()) { server in
            let writer = try await Self.connect(server, "writer-secret")
            #expect(try await Self.ask(writer, ["op": "send", "to": "prices.MSFT", "value": 1, "ack": 1]) == ["op": "ack", "ack": 1])
            #expect(try await Self.ask(writer, ["op": "trigger", "name": "refresh", "ack": 2]) == ["op": "ack", "ack": 2])
            #expect(try await Self.ask(writer, ["op": "fail", "to": "prices.F", "error": "down", "ack": 3]) == ["op": "ack", "ack": 3])
            #expect(try await Self.ask(writer, ["op": "complete", "to": "prices.C", "ack": 4]) == ["op": "ack", "ack": 4])
            #expect(try await Self.ask(writer, ["op": "delete", "name": "prices.C", "ack": 5]) == ["op": "ack", "ack": 5])
            // deny wins over the allow pattern
            Self.expectForbidden(
                try await Self.ask(writer, ["op": "send", "to": "prices.locked", "value": 1, "ack": 6]),
                name: "prices.locked", permission: "publish")
            Self.expectForbidden(
                try await Self.ask(writer, ["op": "send", "to": "orders.eu", "value": 1, "ack": 7]),
                name: "orders.eu", permission: "publish")
            Self.expectForbidden(
                try await Self.ask(writer, ["op": "trigger", "name": "rebalance", "ack": 8]), name: "rebalance", permission: "trigger")
            Self.expectForbidden(
                try await Self.ask(writer, ["op": "subscribe", "id": 1, "to": "prices.MSFT", "demand": 1]),
                name: "prices.MSFT", permission: "subscribe")
            // No pipelines permission: no ad-hoc pipelines at all.
            let refused = try await Self.ask(writer, ["op": "subscribe", "id": 2, "pipeline": "just(1)", "demand": 1])
            #expect(refused["code"] == "forbidden" && refused["id"] == 2 && refused["data"]?["permission"] == "pipelines")
        }
    }

    @Test func pipelinesReadOnlyWhatTheIdentityMayReadAtCompileAndRunTime() async throws {
        try await withServer(try Self.configuration()) { server in
            let reader = try await Self.connect(server, "reader-secret")
            #expect(try await Self.ask(reader, ["op": "subscribe", "id": 1, "pipeline": "prices.A | map(. * 2)", "demand": 5])["op"] == "subscribed")
            // orders.eu may be subscribed to, but not read by pipeline text (pipelines: prices.* only).
            var answer = try await Self.ask(reader, ["op": "subscribe", "id": 2, "pipeline": "merge(prices.A, orders.eu)", "demand": 1])
            Self.expectForbidden(answer, name: "orders.eu", permission: "pipelines")
            #expect(answer["id"] == 2 && answer["data"]?["line"] == 1 && answer["data"]?["column"] == 17)
            // A name nested in a flatMap is checked at compile time too, before anything runs.
            answer = try await Self.ask(reader, ["op": "subscribe", "id": 3, "pipeline": "prices.A | flatMap(news)", "demand": 1])
            Self.expectForbidden(answer, name: "news", permission: "subscribe")
            answer = try await Self.ask(reader, ["op": "subscribe", "id": 4, "pipeline": "trigger(rebalance)", "demand": 1])
            Self.expectForbidden(answer, name: "rebalance", permission: "subscribe")
            // A name computed at run time is checked when it is opened.
            #expect(try await Self.ask(reader, ["op": "subscribe", "id": 5, "pipeline": "just(\"prices.B\") | flatMap(subject(.))", "demand": 1])["op"] == "subscribed")
            #expect(try await Self.ask(reader, ["op": "subscribe", "id": 6, "pipeline": "just(\"orders.secret.x\") | flatMap(subject(.))", "demand": 1])["op"] == "subscribed")
            let failure = try await reader.next()
            Self.expectForbidden(failure, name: "orders.secret.x", permission: "subscribe")
            #expect(failure["id"] == 6)
            // The allowed ones flow.
            let writer = try await Self.connect(server, "writer-secret")
            try await writer.send(json(["op": "send", "to": "prices.A", "value": 21, "ack": 1]), json(["op": "send", "to": "prices.B", "value": 7, "ack": 2]))
            #expect(try await writer.next(2) == [["op": "ack", "ack": 1], ["op": "ack", "ack": 2]])
            var values: [Int64: Value] = [:]
            while values.count < 2 {
                let message = try await reader.next()
                if message["op"] == "next", let id = message["id"]?.intValue { values[id] = message["value"] }
            }
            #expect(values == [1: 42, 5: 7])
        }
    }

    @Test func listShowsOnlyWhatTheIdentityMayUse() async throws {
        try await withServer(try Self.configuration(), setUp: { hub in
            for name in ["prices.A", "orders.secret.x", "news", "view"] { try hub.declareSubject(name) }
            try hub.declareTrigger("refresh")
        }) { server in
            let reader = try await Self.connect(server, "reader-secret")
            let catalog = try await Self.ask(reader, ["op": "list", "ack": 1])
            #expect(catalog["subjects"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["prices.A", "view"])
            #expect(catalog["triggers"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["refresh"])
            let root = try await Self.connect(server, "root-secret")
            let everything = try await Self.ask(root, ["op": "list", "ack": 1])
            #expect(everything["subjects"]?.arrayValue?.count == 4)
        }
    }

    @Test func adminCoversSystemSubjectsDrainAndMetrics() async throws {
        try await withServer(try Self.configuration()) { server in
            let reader = try await Self.connect(server, "reader-secret")
            var answer = try await Self.ask(reader, ["op": "subscribe", "id": 1, "to": "$sys.stats", "demand": 1])
            #expect(answer["code"] == "forbidden" && answer["data"]?["permission"] == "admin" && answer["data"]?["name"] == "$sys.stats")
            answer = try await Self.ask(reader, ["op": "drain", "ack": 2])
            #expect(answer["code"] == "forbidden" && answer["ack"] == 2)
            let operator_ = try await Self.connect(server, "operator-secret")
            #expect(try await Self.ask(operator_, ["op": "subscribe", "id": 1, "to": "$sys.stats", "demand": 1])["op"] == "subscribed")
            // /metrics: the admin permission on `metrics`.
            for (token, status) in [("operator-secret", 200), ("root-secret", 200), ("reader-secret", 401), ("nonsense", 401)] {
                let response = try await HTTPTestClient.request(port: server.port, path: "/metrics", headers: ["Authorization": "Bearer \(token)"])
                #expect(response.status == status, "\(token)")
            }
        }
    }

    @Test func bareTokensMayDoEverything() async throws {
        try await withServer(try Self.configuration()) { server in
            let root = try await Self.connect(server, "root-secret")
            #expect(try await Self.ask(root, ["op": "send", "to": "anything", "value": 1, "ack": 1]) == ["op": "ack", "ack": 1])
            #expect(try await Self.ask(root, ["op": "subscribe", "id": 1, "pipeline": "anything | map(.)", "demand": 1])["op"] == "subscribed")
            #expect(try await Self.ask(root, ["op": "subscribe", "id": 2, "to": "$sys.events", "demand": 1])["op"] == "subscribed")
        }
    }

    @Test func anIdentityHasAtMostItsConnections() async throws {
        try await withServer(try Self.configuration()) { server in
            var readers: [TestClient] = []
            for _ in 0..<3 {
                let reader = try await Self.connect(server, "reader-secret")
                #expect(try await Self.ask(reader, ["op": "list", "ack": 1])["op"] == "catalog")
                readers.append(reader)
            }
            let fourth = try await Self.connect(server, "reader-secret")
            let refused = try await fourth.next()
            #expect(refused["code"] == "limit_exceeded")
            #expect(refused["message"] == "identity 'reader' has 3 connections (its limit)")
            #expect(try await fourth.expectClose().code == 4429)
            // Another identity is not affected, and a slot given back is a slot again.
            let writer = try await Self.connect(server, "writer-secret")
            #expect(try await Self.ask(writer, ["op": "send", "to": "prices.X", "value": 1, "ack": 1]) == ["op": "ack", "ack": 1])
            try await readers[0].close()
            _ = try await readers[0].expectClose()
            var admitted = false
            for _ in 0..<50 where !admitted {
                let again = try await Self.connect(server, "reader-secret")
                try await again.send(json(["op": "list", "ack": 1]))
                admitted = try await again.next()["op"] == "catalog"
                if !admitted { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(admitted)
        }
    }
}
