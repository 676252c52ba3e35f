import Foundation
import NetworkTestSupport
import HubRegistry
import HubServer
import HubTesting
import HubValue
import Testing

/// `/metrics` of a real broker: Prometheus text through swift-metrics and
/// swift-prometheus, with the figures the broker's clients caused.
@Suite("Server metrics", .serialized)
struct ServerMetricsTests {
    /// The samples of a Prometheus text body: `name{labels}` → value (labels as written).
    static func samples(_ text: String) -> [String: Double] {
        var result: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            result[String(line[..<space])] = value
        }
        return result
    }

    static func scrape(_ port: Int, token: String? = nil) async throws -> (text: String, samples: [String: Double]) {
        let response = try await HTTPTestClient.request(
            port: port, path: "/metrics", headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:])
        #expect(response.status == 200)
        #expect(response.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        return (response.text, samples(response.text))
    }

    @Test func publishedDeliveredConnectionsAndErrorsAreExported() async throws {
        try await withServer { server in
            let subscriber = try await server.connect()
            let publisher = try await server.connect()
            try await subscriber.send(json(["op": "subscribe", "id": 1, "to": "prices", "demand": "unlimited"]))
            #expect(try await subscriber.next()["op"] == "subscribed")
            for value in 1...3 {
                try await publisher.send(json(["op": "send", "to": "prices", "value": .int(Int64(value)), "ack": .int(Int64(value))]))
            }
            #expect(try await publisher.next(3).count == 3)
            #expect(try await subscriber.values(3, id: 1) == [1, 2, 3])
            try await publisher.send("not json")
            #expect(try await publisher.next()["code"] == "bad_message")

            let (text, samples) = try await Self.scrape(server.port)
            #expect(samples[#"hub_published_total{name="prices",kind="subject"}"#] == 3)
            #expect(samples[#"hub_delivered_total{name="prices",kind="subject"}"#] == 3)
            #expect(samples[#"hub_dropped_total{name="prices",kind="subject"}"#] == 0)
            #expect(samples["hub_connections"] == 2)
            #expect(samples["hub_connections_opened_total"] == 2)
            #expect(samples["hub_subscriptions"] == 1)
            #expect(samples["hub_protocol_errors_total"] == 1)
            #expect(samples[#"hub_names{kind="subject"}"#] == 1)
            #expect((samples["hub_received_bytes_total"] ?? 0) > 100)
            #expect((samples["hub_sent_bytes_total"] ?? 0) > 100)
            #expect(samples["hub_event_loop_lag_max_seconds"] != nil)
            #expect(text.contains("# HELP hub_delivered_total Values delivered"))
            #expect(text.contains("# TYPE hub_event_loop_lag_seconds histogram"))

            // Counters keep counting across scrapes (each scrape exports the difference).
            try await publisher.send(json(["op": "send", "to": "prices", "value": 4, "ack": 9]))
            #expect(try await publisher.next() == ["op": "ack", "ack": 9])
            #expect(try await subscriber.values(1, id: 1) == [4])
            let again = try await Self.scrape(server.port).samples
            #expect(again[#"hub_published_total{name="prices",kind="subject"}"#] == 4)
            #expect(again[#"hub_delivered_total{name="prices",kind="subject"}"#] == 4)
        }
    }

    @Test func namesPastTheLabelLimitAreSummedUnderOther() async throws {
        var configuration = HubService.Configuration()
        configuration.hub.metricsNameCapacity = 2
        try await withServer(configuration) { server in
            let client = try await server.connect()
            for (index, name) in ["a", "b", "c", "d", "e"].enumerated() {
                try await client.send(json(["op": "send", "to": .string(name), "value": 1, "ack": .int(Int64(index))]))
            }
            #expect(try await client.next(5).allSatisfy { $0["op"] == "ack" })
            let (text, samples) = try await Self.scrape(server.port)
            let published = samples.filter { $0.key.hasPrefix("hub_published_total{") }
            #expect(published.count == 4)  // two names, $other, $adhoc
            #expect(samples[#"hub_published_total{name="a",kind="subject"}"#] == 1)
            #expect(samples[#"hub_published_total{name="b",kind="subject"}"#] == 1)
            #expect(samples[#"hub_published_total{name="$other",kind="shared"}"#] == 3)
            #expect(!text.contains(#"name="e""#))
        }
    }

    @Test func withAuthTheMetricsNeedAnAcceptedTokenAndAuthFailuresAreCounted() async throws {
        var configuration = HubService.Configuration()
        configuration.session.tokens = ["ops-token"]
        try await withServer(configuration) { server in
            let refused = try await HTTPTestClient.request(port: server.port, path: "/metrics")
            #expect(refused.status == 401)
            #expect(refused.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
            let wrong = try await HTTPTestClient.request(
                port: server.port, path: "/metrics", headers: ["Authorization": "Bearer nope"])
            #expect(wrong.status == 401)
            let intruder = try await server.connect(authorization: "Bearer nope")
            #expect(try await intruder.next()["code"] == "unauthorized")
            #expect(try await intruder.expectClose().code == 4401)
            let samples = try await Self.scrape(server.port, token: "ops-token").samples
            #expect(samples["hub_auth_failures_total"] == 1)
        }
    }

    @Test func dropsOverflowsPipelineFailuresAndTriggersAreCountedOnTheirPaths() async throws {
        try await withServer(setUp: { hub in
            _ = try hub.declareSubject("quotes")
            _ = try hub.declareTrigger("refresh")
            _ = try hub.declarePipeline("bids", source: "quotes | map(.bid)")
            // Runs with no subscriber: its failure is counted all the same.
            _ = try hub.declarePipeline("audit", source: "quotes | map(.bid)", runs: true)
        }) { server in
            let client = try await server.connect()
            let feeder = try await server.connect()
            try await client.send(
                // A buffer of one without demand that drops the newest: 2 of 3 dropped.
                json(["op": "subscribe", "id": 1, "to": "news", "buffer": 1, "overflow": "dropNewest"]),
                // A buffer of one that ends the subscription when it overflows.
                json(["op": "subscribe", "id": 2, "to": "alerts", "buffer": 1]),
                // A named and an ad-hoc pipeline that fail on a value without `.bid`.
                json(["op": "subscribe", "id": 3, "to": "bids", "demand": "unlimited"]),
                json(["op": "subscribe", "id": 4, "pipeline": "quotes | map(.bid * 2)", "demand": "unlimited"]),
                json(["op": "subscribe", "id": 5, "to": "refresh", "demand": "unlimited"]))
            #expect(try await client.next(5).allSatisfy { $0["op"] == "subscribed" })
            var requests: [String] = []
            for value in 1...3 { requests.append(json(["op": "send", "to": "news", "value": .int(Int64(value))])) }
            for value in 1...2 { requests.append(json(["op": "send", "to": "alerts", "value": .int(Int64(value))])) }
            requests.append(json(["op": "send", "to": "quotes", "value": ["bid": 7]]))
            requests.append(json(["op": "send", "to": "quotes", "value": 5]))
            requests.append(json(["op": "trigger", "name": "refresh"]))
            requests.append(json(["op": "trigger", "name": "refresh", "ack": 1]))
            try await feeder.send(requests)
            #expect(try await feeder.next() == ["op": "ack", "ack": 1])
            // alerts' overflow, bids' 7 and failure, the ad-hoc 14 and failure, two activations.
            let received = try await client.next(7)
            #expect(received.filter { $0["op"] == "error" }.compactMap { $0["code"]?.stringValue }.sorted()
                == ["failed", "failed", "overflow"], "\(received)")

            let samples = try await Self.scrape(server.port).samples
            #expect(samples[#"hub_published_total{name="news",kind="subject"}"#] == 3)
            #expect(samples[#"hub_dropped_total{name="news",kind="subject"}"#] == 2)
            #expect(samples[#"hub_delivered_total{name="news",kind="subject"}"#] == 0)
            #expect(samples[#"hub_overflows_total{name="alerts",kind="subject"}"#] == 1)
            #expect(samples[#"hub_overflows_total{name="news",kind="subject"}"#] == 0)
            #expect(samples[#"hub_published_total{name="quotes",kind="subject"}"#] == 2)
            #expect(samples[#"hub_delivered_total{name="bids",kind="pipeline"}"#] == 1)
            #expect(samples[#"hub_delivered_total{name="$adhoc",kind="shared"}"#] == 1)
            #expect(samples["hub_pipeline_failures_total"] == 2)  // the two subscriptions
            #expect(samples["hub_named_pipeline_failures_total"] == 2)  // bids (once) and audit
            #expect(samples[#"hub_published_total{name="refresh",kind="trigger"}"#] == 2)
            #expect(samples[#"hub_delivered_total{name="refresh",kind="trigger"}"#] == 2)
            #expect(samples[#"hub_names{kind="pipeline"}"#] == 2)
            #expect(samples[#"hub_names{kind="trigger"}"#] == 1)
            #expect(samples["hub_subscriptions"] == 2)  // news and refresh are live

            // A deleted name keeps its one series (its counters live on), not a second one.
            try await feeder.send(json(["op": "delete", "name": "news", "ack": 2]))
            #expect(try await feeder.next() == ["op": "ack", "ack": 2])
            let (text, after) = try await Self.scrape(server.port)
            #expect(after[#"hub_published_total{name="news",kind="subject"}"#] == 3)
            #expect(text.components(separatedBy: #"hub_published_total{name="news""#).count == 2, "\(text)")
            // $sys.stats names it as it was too.
            try await feeder.send(json(["op": "subscribe", "id": 9, "to": "$sys.stats", "demand": 1]))
            #expect(try await feeder.next()["op"] == "subscribed")
            let stats = try await feeder.values(1, id: 9)[0]
            let news = stats["names"]?.arrayValue?.first { $0["name"] == "news" }
            #expect(news?["kind"] == "subject" && news?["published"] == 3, "\(String(describing: news))")
        }
    }

    @Test func queuedBytesAndSlowConsumerClosesAreExportedAndLogged() async throws {
        let log = LogRecorder()
        let limit = 4 << 20
        let configuration = serviceConfiguration(session: SessionConfiguration(maxQueuedBytes: limit, closeTimeout: .seconds(10)))
        try await withServer(configuration, logger: log.logger()) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "firehose", "demand": "unlimited"]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.withConnection { $0.pauseReading() }
            /// Publishes four 64 KiB values; false once the subscription is gone (closed).
            @Sendable func publish(_ hub: Hub) -> Bool {
                guard case .subject(let subject) = hub.entry(named: "firehose") else { return false }
                for _ in 0..<4 where subject.subscriberCount > 0 {
                    hub.publish(.string(String(repeating: "q", count: 64 << 10)), to: subject)
                }
                return subject.subscriberCount > 0
            }
            // Scraped after each round: once the socket is full, what the client leaves
            // unread queues in the broker (the gauge), up to the limit, where the broker
            // closes the connection (the counter). Bounded: 1 GiB.
            var largest = 0.0
            var open = true
            var rounds = 0
            while open, rounds < 4096 {
                open = try await server.withHub(publish)
                rounds += 1
                guard open else { break }
                let samples = try await Self.scrape(server.port).samples
                largest = max(largest, samples["hub_queued_bytes"] ?? 0)
                #expect(samples["hub_slow_consumer_closes_total"] == 0)
            }
            #expect(!open)
            #expect(largest >= Double(1 << 20) && largest <= Double(limit + (1 << 20)), "\(largest)")
            let samples = try await Self.scrape(server.port).samples
            #expect(samples["hub_slow_consumer_closes_total"] == 1)
            #expect(samples["hub_subscriptions"] == 0)
            let logged = log.entries("closing slow consumer")
            #expect(logged.count == 1)
            #expect(logged.first?.level == .warning)
            #expect(logged.first?.metadata["limit"] == "\(limit)")
            #expect(logged.first?.metadata["peer"] == "127.0.0.1")
            try await client.withConnection { $0.resumeReading() }
            #expect(try await client.expectClose(timeout: .seconds(20)).code == 4008)
        }
    }

    @Test func aBlockedEventLoopShowsAsLag() async throws {
        try await withServer { server in
            _ = try await Self.scrape(server.port)  // the window starts here
            // The probe timer (every 250 ms) due during a 600 ms block runs at least 350 ms late;
            // a loaded machine only makes it later.
            _ = try await server.withHub { _ in usleep(600_000) }
            let samples = try await Self.scrape(server.port).samples
            #expect((samples["hub_event_loop_lag_max_seconds"] ?? 0) >= 0.3, "\(samples)")
            #expect((samples["hub_event_loop_lag_seconds_count"] ?? 0) >= 1)
            #expect((samples["hub_event_loop_lag_seconds_sum"] ?? 0) >= 0.3)
        }
    }

    @Test func rateLimitClosesAndConnectionRefusalsAreCounted() async throws {
        var configuration = serviceConfiguration(maxConnections: 2)
        configuration.session.inboundRate = InboundRateLimits(messagesPerSecond: 5)
        try await withServer(configuration) { server in
            let flooder = try await server.connect()
            try await flooder.send((0..<40).map { json(["op": "send", "to": "s", "value": .int(Int64($0))]) })
            _ = try await flooder.expectClose()
            _ = try await server.eventuallyStatistics { $0.connections == 0 }
            #expect(try await Self.scrape(server.port).samples["hub_rate_limit_closes_total"] == 1)

            let first = try await server.connect()
            try await first.send(json(["op": "subscribe", "id": 1, "to": "$sys.events", "demand": "unlimited"]))
            #expect(try await first.next()["op"] == "subscribed")
            let second = try await server.connect()
            let third = try await server.connect(welcome: false)
            #expect(try await third.expectClose().code == 4429)
            // The events: second's connect, third's connect and refusal (and disconnect).
            let events = try await first.values(3, id: 1)
            #expect(events.map { $0["type"] } == ["connect", "connect", "connection_refused"], "\(events)")
            let samples = try await Self.scrape(server.port).samples
            #expect(samples["hub_connection_refusals_total"] == 1)
            #expect(samples["hub_connections_opened_total"] == 4)
            _ = (first, second)
        }
    }
}
