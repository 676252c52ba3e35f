import NetworkTestSupport
import HubServer
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
}
