import HubRegistry
import HubServer
import HubTesting
import HubValue
import Logging
import NetworkTestSupport
import Testing

/// What a real broker logs about its clients: who connected and left and why, the
/// protocol errors, authentication failures and pipeline failures (with the pipeline
/// and the sender of the value that failed it), each at its level. The slow consumer's
/// line is checked with its metric (ServerMetricsTests).
@Suite("Server logs", .serialized)
struct ServerLogTests {
    @Test func connectionsProtocolErrorsAndPipelineFailuresAreLoggedWithWhoAndWhy() async throws {
        let log = LogRecorder()
        try await withServer(logger: log.logger(), setUp: { hub in
            _ = try hub.declareSubject("quotes")
            _ = try hub.declarePipeline("bids", source: "quotes | map(.bid)")
        }) { server in
            let watcher = try await server.connect()
            try await watcher.send(
                json(["op": "subscribe", "id": 1, "to": "bids", "demand": "unlimited"]),
                json(["op": "subscribe", "id": 2, "to": "$sys.events", "demand": "unlimited"]))
            #expect(try await watcher.next(2).allSatisfy { $0["op"] == "subscribed" })
            let feeder = try await server.connect()
            let feederSession = try #require(feeder.welcome["session"]?.stringValue)
            let watcherSession = try #require(watcher.welcome["session"]?.stringValue)
            try await feeder.send(
                json(["op": "hello", "client": "feeder"]),
                json(["op": "send", "to": "quotes", "value": 5, "ack": 1]))
            #expect(try await feeder.next() == ["op": "ack", "ack": 1])
            let sender = #"session \#(feederSession) (client "feeder")"#

            // The watcher: the feeder's connect event, its subscription's failure, and the
            // failure events of the named pipeline (once) and of the subscription.
            let seen = try await watcher.next(4)
            #expect(seen.contains { $0["op"] == "error" && $0["id"] == 1 && $0["code"] == "failed" }, "\(seen)")
            let failureEvent = seen.compactMap { $0["value"] }.first { $0["type"] == "pipeline_failure" }
            #expect(failureEvent?["pipeline"] == "bids")
            #expect(failureEvent?["sender"] == .string(sender))
            #expect(failureEvent?["session"] == .string(watcherSession))
            let namedEvent = seen.compactMap { $0["value"] }.first { $0["type"] == "named_pipeline_failure" }
            #expect(namedEvent?["pipeline"] == "bids")
            #expect(namedEvent?["sender"] == .string(sender))
            #expect(namedEvent?["error"]?.stringValue?.contains("'.bid' needs an object") == true, "\(seen)")

            try await feeder.send("not json")
            #expect(try await feeder.next()["code"] == "bad_message")
            try await feeder.close(code: 1000)
            _ = try await feeder.expectClose()
            #expect(try await server.eventuallyStatistics { $0.connections == 1 }.connections == 1)

            let opened = log.entries("connection opened")
            #expect(opened.count == 2)
            #expect(opened.allSatisfy { $0.level == .info && $0.metadata["peer"] == "127.0.0.1" && $0.metadata["session"] != nil })

            // The subscriber's end names the pipeline and the value's sender; the named
            // pipeline's own line (once, at error) too.
            let subscription = log.entries("pipeline subscription failed")
            #expect(subscription.count == 1)
            #expect(subscription.first?.level == .notice)
            #expect(subscription.first?.metadata["pipeline"] == "bids")
            #expect(subscription.first?.metadata["sender"] == sender)
            #expect(subscription.first?.metadata["session"] == watcherSession)
            let pipeline = log.entries("pipeline failed")
            #expect(pipeline.count == 1)
            #expect(pipeline.first?.level == .error)
            #expect(pipeline.first?.metadata["sender"] == sender)

            let protocolError = log.entries("protocol error")
            #expect(protocolError.count == 1)
            #expect(protocolError.first?.level == .notice)
            #expect(protocolError.first?.metadata["code"] == "bad_message")
            #expect(protocolError.first?.metadata["session"] == feederSession)
            #expect(protocolError.first?.metadata["client"] == "feeder")

            // A relayed connection's close reaches its session on the hub's loop after
            // the connection count drops: wait for the line itself.
            let closed = await log.entries("connection closed") { entries in
                entries.contains { $0.metadata["session"] == feederSession }
            }.filter { $0.metadata["session"] == feederSession }
            #expect(closed.count == 1)
            #expect(closed.first?.level == .info)
            #expect(closed.first?.metadata["peer"] == "127.0.0.1")
            #expect(closed.first?.metadata["client"] == "feeder")
            #expect(closed.first?.metadata["code"] == "1000")
            #expect(closed.first?.metadata["authenticated"] == "true")
            #expect(closed.first?.metadata["identity"] == "anonymous")
        }
    }

    @Test func anAuthenticationFailureIsAWarningWithThePeerAndTheReasonAndAClosedConnectionNamesItsIdentity() async throws {
        let log = LogRecorder()
        var configuration = HubService.Configuration()
        configuration.session.tokens = ["good"]
        configuration.session.auth = AuthConfiguration(identities: [
            AuthConfiguration.IdentityConfiguration(
                identity: Identity(name: "operator", permissions: .everything), tokens: ["operator-secret"]),
        ])
        try await withServer(configuration, logger: log.logger()) { server in
            let operator_ = try await server.connect(authorization: "Bearer operator-secret")
            let session = try #require(operator_.welcome["session"]?.stringValue)
            try await operator_.close(code: 1000)
            _ = try await operator_.expectClose()
            _ = try await server.eventuallyStatistics { $0.connections == 0 }
            let left = await log.entries("connection closed") { entries in
                entries.contains { $0.metadata["session"] == session }
            }.filter { $0.metadata["session"] == session }
            #expect(left.first?.metadata["identity"] == "operator")
            #expect(left.first?.metadata["authenticated"] == "true")

            let intruder = try await server.connect(authorization: "Bearer bad")
            #expect(try await intruder.next()["code"] == "unauthorized")
            #expect(try await intruder.expectClose().code == 4401)
            _ = try await server.eventuallyStatistics { $0.connections == 0 }
            let failed = log.entries("authentication failed")
            #expect(failed.count == 1)
            #expect(failed.first?.level == .warning)
            #expect(failed.first?.metadata["peer"] == "127.0.0.1")
            #expect(failed.first?.metadata["reason"]?.hasPrefix("the bearer token is not accepted") == true)
            let closed = await log.entries("connection closed") { entries in
                entries.contains { $0.metadata["session"] != session }
            }.filter { $0.metadata["session"] != session }
            #expect(closed.count == 1)
            #expect(closed.first?.metadata["code"] == "4401")
            #expect(closed.first?.metadata["authenticated"] == "false")
            #expect(closed.first?.metadata["identity"] == "none")
        }
    }

    @Test func aClientCannotFloodTheLogWithBadMessages() async throws {
        let log = LogRecorder()
        try await withServer(logger: log.logger()) { server in
            let client = try await server.connect()
            try await client.send((0..<50).map { _ in "not json" })
            #expect(try await client.next(50).allSatisfy { $0["code"] == "bad_message" })
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": "fail(1)", "demand": 1]))
            #expect(try await client.next(2).map { $0["op"] } == ["subscribed", "error"])
            #expect(log.entries("protocol error").count == 20)
            #expect(log.entries("pipeline subscription failed").isEmpty)
            #expect(log.entries("further protocol errors and pipeline failures of this connection are not logged").count == 1)
            // Counted all the same.
            let samples = try await ServerMetricsTests.scrape(server.port).samples
            #expect(samples["hub_protocol_errors_total"] == 50)
            #expect(samples["hub_pipeline_failures_total"] == 1)
            try await client.close(code: 1000)
            _ = try await client.expectClose()
            _ = try await server.eventuallyStatistics { $0.connections == 0 }
            let closed = await log.entries("connection closed") { !$0.isEmpty }
            #expect(closed.first?.metadata["problems"] == "51")
        }
    }
}
