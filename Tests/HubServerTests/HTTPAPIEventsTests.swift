import Foundation
import HubRegistry
import HubServer
import HubSQLite
import HubValue
import NetworkTestSupport
import Testing

/// Event streams (`GET …/events`, Server-Sent Events) read over real sockets from real
/// services: values with their ids, the end of a subject, resuming by `Last-Event-ID`,
/// `?since=`, `?last=` (and across a restart of a durable subject), `event: reset`,
/// pipelines and triggers, refusals before the stream, and the limits.
@Suite("HTTP API: event streams", .serialized)
struct HTTPAPIEventsTests {
    /// A stream opened on a connection of its own, read off the test's thread.
    final class Stream: Sendable {
        let client: HTTPTestClient
        let head: HTTPTestClient.Response

        init(_ server: HubServerHarness, _ path: String, headers: [String: String] = [:]) async throws {
            let port = server.port
            (client, head) = try await Blocking.run {
                let client = try HTTPTestClient(port: port)
                return (client, try client.openStream(path: path, headers: headers))
            }
        }

        func next() async throws -> HTTPTestClient.Event? {
            let client = self.client
            return try await Blocking.run { try client.nextEvent() }
        }

        func rest() async throws -> [HTTPTestClient.Event] {
            let client = self.client
            return try await Blocking.run { try client.remainingEvents() }
        }
    }

    static func post(_ server: HubServerHarness, _ path: String, _ body: String = "") async throws -> Value? {
        let answer = try await HTTPAPIPublishTests.ask(server, "POST", path, body: body.isEmpty ? nil : body)
        #expect(answer.status == 200, "\(path): \(answer.text)")
        return try? Value.parse(answer.body)
    }

    /// The server has `count` live subscriptions (a stream is subscribed once its head is out).
    static func subscribers(_ server: HubServerHarness, of name: String, _ count: Int) async throws -> Bool {
        try await server.eventually { hub in
            guard case .subject(let subject)? = hub.entry(named: name) else { return false }
            return subject.subscriberCount == count
        }
    }

    @Test(arguments: [1, 3])
    func aSubjectWithHistoryStreamsItsValuesWithTheirIdsThenItsEnd(loops: Int) async throws {
        var configuration = HubService.Configuration()
        configuration.eventLoops = loops
        try await withServer(configuration, setUp: { hub in try hub.declareSubject("orders", history: HistoryRetention(size: 100)) }) { server in
            if loops > 1 { #expect(try await HTTPTestClient.request(port: server.port, path: "/health").status == 200) }
            let stream = try await Stream(server, "/v1/subjects/orders/events")
            #expect(stream.head.status == 200)
            #expect(stream.head.headers["content-type"] == "text/event-stream")
            #expect(stream.head.headers["cache-control"] == "no-store")
            let epoch = try #require(try await Self.post(server, "/v1/subjects/orders", #"{"n": 1}"#)?["epoch"]?.stringValue)
            _ = try await Self.post(server, "/v1/subjects/orders", #"{"n": 2}"#)
            #expect(try await stream.next() == .init(id: "1@\(epoch)", data: #"{"n":1}"#))
            #expect(try await stream.next() == .init(id: "2@\(epoch)", data: #"{"n":2}"#))
            _ = try await Self.post(server, "/v1/subjects/orders/complete")
            #expect(try await stream.next() == .init(event: "complete", data: "{}"))
            #expect(try await stream.next() == nil)
            // The stream's session is gone with it.
            #expect(try await server.eventually { _ in true })
            let statistics = await server.service.statistics
            #expect(statistics.connections == 0)
        }
    }

    @Test func aStreamResumesByLastEventIDSinceAndLastAndSaysWhenItCannot() async throws {
        try await withServer(setUp: { hub in try hub.declareSubject("orders", history: HistoryRetention(size: 100)) }) { server in
            var epoch = ""
            for n in 1...3 { epoch = try await Self.post(server, "/v1/subjects/orders", "\(n)")?["epoch"]?.stringValue ?? "" }
            let resumed = try await Stream(server, "/v1/subjects/orders/events?demand=2", headers: ["Last-Event-ID": "1@\(epoch)"])
            #expect(try await resumed.rest() == [.init(id: "2@\(epoch)", data: "2"), .init(id: "3@\(epoch)", data: "3")])
            let since = try await Stream(server, "/v1/subjects/orders/events?demand=1&since=2@\(epoch)")
            #expect(try await since.rest() == [.init(id: "3@\(epoch)", data: "3")])
            let last = try await Stream(server, "/v1/subjects/orders/events?demand=2&last=2")
            #expect(try await last.rest().map(\.data) == ["2", "3"])
            // Last-Event-ID wins over the query (what an EventSource sends when it reconnects).
            let both = try await Stream(server, "/v1/subjects/orders/events?demand=1&last=3", headers: ["Last-Event-ID": "2@\(epoch)"])
            #expect(try await both.rest().map(\.data) == ["3"])
            // Another epoch: a reset carrying the current one, then live values.
            let reset = try await Stream(server, "/v1/subjects/orders/events?demand=1", headers: ["Last-Event-ID": "2@elsewhere"])
            #expect(try await reset.next() == .init(event: "reset", data: #"{"epoch":"\#(epoch)","offset":3}"#))
            _ = try await Self.post(server, "/v1/subjects/orders", "4")
            #expect(try await reset.rest() == [.init(id: "4@\(epoch)", data: "4")])
        }
    }

    @Test func aDurableSubjectsStreamResumesAcrossARestartWithNothingLostOrRepeated() async throws {
        let directory = NSTemporaryDirectory() + "hub-sse-tests-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = HubService.Configuration()
        configuration.storage = SQLiteStorage(path: directory, sync: .full)
        let declare: @Sendable (Hub) throws -> Void = { hub in
            try hub.declareSubject("orders", history: HistoryRetention(size: 1000), durable: true)
        }
        var lastID = ""
        var seen: [String] = []
        try await withServer(configuration, setUp: declare) { server in
            let stream = try await Stream(server, "/v1/subjects/orders/events")
            #expect(try await Self.subscribers(server, of: "orders", 1))
            for n in 1...3 { _ = try await Self.post(server, "/v1/subjects/orders", "\(n)") }
            for _ in 1...3 {
                let event = try #require(try await stream.next())
                seen.append(event.data)
                lastID = event.id ?? ""
            }
        }
        try await withServer(configuration, setUp: declare) { server in
            for n in 4...5 { _ = try await Self.post(server, "/v1/subjects/orders", "\(n)") }
            // What an EventSource does on its own: reconnect with the last id it saw.
            let resumed = try await Stream(server, "/v1/subjects/orders/events", headers: ["Last-Event-ID": lastID])
            #expect(resumed.head.status == 200)
            for _ in 1...2 { seen.append(try #require(try await resumed.next()).data) }
            _ = try await Self.post(server, "/v1/subjects/orders", "6")
            let live = try #require(try await resumed.next())
            seen.append(live.data)
            #expect(live.id?.hasPrefix("6@") == true && lastID.hasSuffix(String(live.id!.dropFirst(1))), "\(live) after \(lastID)")
        }
        #expect(seen == ["1", "2", "3", "4", "5", "6"])
    }

    @Test func pipelinesTriggersAndAdHocPipelinesStreamToo() async throws {
        try await withServer(setUp: { hub in
            _ = try hub.declareTrigger("refresh")
            try hub.declarePipeline("doubled", source: "prices | map(. * 2)")
        }) { server in
            let doubled = try await Stream(server, "/v1/pipelines/doubled/events?demand=1")
            let adHoc = try await Stream(server, "/v1/events?demand=1&pipeline=" + "prices | map(. + 1)".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
            let refresh = try await Stream(server, "/v1/triggers/refresh/events?demand=1")
            #expect([doubled.head.status, adHoc.head.status, refresh.head.status] as [Int] == [200, 200, 200])
            #expect(try await Self.subscribers(server, of: "prices", 2))
            _ = try await Self.post(server, "/v1/subjects/prices", "20")
            #expect(try await doubled.rest() == [.init(data: "40")])
            #expect(try await adHoc.rest() == [.init(data: "21")])
            #expect(try await server.eventually { hub in
                if case .trigger(let trigger)? = hub.entry(named: "refresh") { return trigger.subscriberCount == 1 }
                return false
            })
            _ = try await Self.post(server, "/v1/triggers/refresh", #""eu""#)
            #expect(try await refresh.rest().count == 1)
        }
    }

    @Test func refusalsComeAsAnAnswerBeforeAnyStream() async throws {
        var configuration = try PermissionTests.configuration()
        configuration.session.allowsPipelines = false
        try await withServer(configuration, setUp: { hub in
            try hub.declareSubject("orders.a", history: HistoryRetention(size: 10))
        }) { server in
            let reader = ["Authorization": "Bearer reader-secret"]
            func status(_ path: String, _ headers: [String: String] = reader) async throws -> (Int, Value?) {
                let stream = try await Stream(server, path, headers: headers)
                return (stream.head.status, try? Value.parse(stream.head.body))
            }
            #expect(try await status("/v1/subjects/orders.a/events", [:]).0 == 401)
            #expect(try await status("/v1/subjects/orders.a/events", ["Authorization": "Bearer nope"]).0 == 401)
            let forbidden = try await status("/v1/subjects/orders.secret.x/events")
            #expect(forbidden.0 == 403 && forbidden.1?["code"] == "forbidden", "\(forbidden)")
            #expect(try await status("/v1/subjects/$sys.stats/events").0 == 403)
            #expect(try await status("/v1/pipelines/nope/events").0 == 404)
            #expect(try await status("/v1/events?pipeline=prices").0 == 403)
            #expect(try await status("/v1/events").0 == 400)
            #expect(try await status("/v1/subjects/orders.a/events", reader.merging(["Last-Event-ID": "x@y"]) { $1 }).0 == 400)
            #expect(try await status("/v1/subjects/orders.a/events?demand=0").0 == 400)
            #expect(try await status("/v1/subjects/orders.a/events?last=-1").0 == 400)
            #expect(try await status("/v1/subjects/orders.a/events?overflow=sometimes").0 == 400)
            // An EventSource cannot set headers: the token may come as ?token= instead,
            // under the same checks (and the header wins when both are there).
            #expect(try await status("/v1/subjects/orders.a/events?token=nope", [:]).0 == 401)
            #expect(try await status("/v1/subjects/orders.secret.x/events?token=reader-secret", [:]).0 == 403)
            #expect(try await status("/v1/subjects/orders.a/events?token=reader-secret", ["Authorization": "Bearer nope"]).0 == 401)
            let byParameter = try await Stream(server, "/v1/subjects/orders.a/events?token=reader-secret&last=1", headers: [:])
            #expect(byParameter.head.status == 200)
            // Or as the hub_token cookie (an EventSource sends the page's cookies), under
            // the same checks; only event streams take it.
            #expect(try await status("/v1/subjects/orders.a/events", ["Cookie": "hub_token=nope"]).0 == 401)
            #expect(try await status("/v1/subjects/orders.secret.x/events", ["Cookie": "hub_token=reader-secret"]).0 == 403)
            let byCookie = try await Stream(server, "/v1/subjects/orders.a/events?last=1", headers: ["Cookie": "a=b; hub_token=reader-secret"])
            #expect(byCookie.head.status == 200)
            let publishByCookie = try await HTTPAPIPublishTests.ask(
                server, "POST", "/v1/subjects/orders.a", body: "1", headers: ["Cookie": "hub_token=writer-secret"])
            #expect(publishByCookie.status == 401, "\(publishByCookie.text)")
            let operatorStats = try await Stream(server, "/v1/subjects/$sys.stats/events?demand=1", headers: ["Authorization": "Bearer operator-secret"])
            #expect(operatorStats.head.status == 200)
            #expect(try await operatorStats.rest().count == 1)
        }
    }

    @Test func aStreamCountsAsAConnection() async throws {
        try await withServer(serviceConfiguration(maxConnections: 1)) { server in
            let stream = try await Stream(server, "/v1/subjects/prices/events")
            #expect(stream.head.status == 200)
            let second = try await Stream(server, "/v1/subjects/prices/events")
            #expect(second.head.status == 503)
            let client = try await server.connect(welcome: false)
            #expect(try await client.expectClose().code == 4429)
            // The stream ends when its reader goes: the place is free again.
            stream.client.shutdownConnection()
            #expect(try await HTTPAPIPublishTests.publishesAgain(server))
        }
    }

    @Test func aQuietStreamGetsAHeartbeatComment() async throws {
        var configuration = HubService.Configuration()
        configuration.pingInterval = 1
        try await withServer(configuration) { server in
            let stream = try await Stream(server, "/v1/subjects/quiet/events")
            #expect(stream.head.status == 200)
            // A comment alone: an event with no field (EventSource ignores it).
            #expect(try await stream.next() == .init(data: ""))
            _ = try await Self.post(server, "/v1/subjects/quiet", "1")
            var next = try await stream.next()
            while next == .init(data: "") { next = try await stream.next() }
            #expect(next == .init(data: "1"))
        }
    }

    @Test func aStreamIsCountedWithTheConnectionsAndADrainEndsIt() async throws {
        try await withServer { server in
            let stream = try await Stream(server, "/v1/subjects/prices/events")
            #expect(stream.head.status == 200)
            #expect(try await Self.subscribers(server, of: "prices", 1))
            let statistics = await server.service.statistics
            #expect(statistics.sessions == 1 && statistics.subscriptions == 1, "\(statistics)")
            _ = try await Self.post(server, "/v1/subjects/prices", "1")
            #expect(try await stream.next() == .init(data: "1"))
            await server.service.drain(grace: .milliseconds(100))
            let last = try #require(try await stream.next())
            #expect(last.event == "error" && last.data.contains("shutting_down"), "\(last)")
            #expect(try await stream.next() == nil)
            #expect(await server.service.statistics.sessions == 0)
        }
    }

    /// `$sys.stats` and `$sys.connections` count event streams as connections and HTTP
    /// publishes with the others (and so do /metrics and the dashboard, which read the same
    /// figures).
    @Test func theSystemSubjectsCountStreamsAndHTTPPublishes() async throws {
        var configuration = HubService.Configuration()
        configuration.statsInterval = .milliseconds(50)
        try await withServer(configuration) { server in
            let prices = try await Stream(server, "/v1/subjects/prices/events")
            #expect(try await Self.subscribers(server, of: "prices", 1))
            for n in 1...3 { _ = try await Self.post(server, "/v1/subjects/prices", "\(n)") }
            // Each tick of $sys.connections lists the open connections: the two streams, each
            // with its subscription (the first list may come before the second's is counted).
            let connections = try await Stream(server, "/v1/subjects/$sys.connections/events")
            var listed: Value?
            for _ in 0..<100 {
                guard let event = try await connections.next(), let value = try? Value.parse(Array(event.data.utf8)) else { break }
                listed = value
                if value["total"] == 2, value["connections"]?.arrayValue?.filter({ $0["subscriptions"] == 1 }).count == 2 { break }
            }
            #expect(listed?["total"] == 2, "\(String(describing: listed))")
            #expect(listed?["connections"]?.arrayValue?.filter { $0["subscriptions"] == 1 }.count == 2, "\(String(describing: listed))")
            // $sys.stats (read whole: a request's session is not a connection).
            var stats: Value?
            for _ in 0..<200 {
                stats = try? Value.parse(try await HTTPAPIPublishTests.ask(server, "GET", "/v1/subjects/$sys.stats").body)
                if stats?["connections"] == 2, stats?["totals"]?["published"] == 3 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(stats?["connections"] == 2 && stats?["totals"]?["published"] == 3, "\(String(describing: stats))")
            #expect(try await prices.next()?.data == "1")
        }
    }

    /// The events of one pass of the hub's loop go out as one chunk (one socket write),
    /// not one each: on one loop, and on a connection loop of three.
    @Test(arguments: [1, 3])
    func theEventsOfOnePassGoOutAsOneChunk(loops: Int) async throws {
        var configuration = HubService.Configuration()
        configuration.eventLoops = loops
        try await withServer(configuration) { server in
            if loops > 1 { #expect(try await HTTPTestClient.request(port: server.port, path: "/health").status == 200) }
            let stream = try await Stream(server, "/v1/subjects/ticks/events")
            #expect(try await Self.subscribers(server, of: "ticks", 1))
            try await server.withHub { hub in for n in 1...100 { try hub.send(.int(Int64(n)), to: "ticks") } }
            for n in 1...100 {
                let event = try #require(try await stream.next())
                #expect(event.data == "\(n)")
            }
            #expect(stream.client.chunksRead == 1, "100 events in \(stream.client.chunksRead) chunks")
        }
    }

    /// On one loop, and on a connection loop of three (the second socket goes there).
    @Test(arguments: [1, 3])
    func aStreamWhoseReaderStopsReadingIsClosedAsASlowConsumer(loops: Int) async throws {
        var session = SessionConfiguration()
        session.maxQueuedBytes = 256 << 10
        var configuration = serviceConfiguration(session: session)
        configuration.eventLoops = loops
        try await withServer(configuration) { server in
            if loops > 1 { #expect(try await HTTPTestClient.request(port: server.port, path: "/health").status == 200) }
            let stream = try await Stream(server, "/v1/subjects/bulk/events")
            #expect(try await Self.subscribers(server, of: "bulk", 1))
            // Far more than the socket's buffers and the bound hold, while nothing is read.
            let value = Value.string(String(repeating: "x", count: 16 << 10))
            for _ in 0..<40 {
                try await server.withHub { hub in for _ in 0..<50 { try hub.send(value, to: "bulk") } }
            }
            let events = try await stream.rest()
            let last = try #require(events.last)
            #expect(last.event == "error", "\(events.count) events")
            #expect(last.data.contains("limit_exceeded") && last.data.contains("slow consumer"), "\(last)")
            #expect(events.count < 2001)
        }
    }
}
