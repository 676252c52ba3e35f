import Foundation
import HubRegistry
import HubServer
import HubSQLite
import HubValue
import NetworkTestSupport
import Testing

/// The HTTP API's request/response operations (`POST`/`GET`/`DELETE` under `/v1/`),
/// served by a real service on its WebSocket port and asked over real sockets: the same
/// tokens, permissions, limits and errors as the protocol's operations.
@Suite("HTTP API: publish and read", .serialized)
struct HTTPAPIPublishTests {
    /// One request on a fresh connection.
    static func ask(
        _ server: HubServerHarness, _ method: String, _ path: String, body: String? = nil,
        headers: [String: String] = [:]
    ) async throws -> HTTPTestClient.Response {
        let port = server.port
        var withType = headers
        if body != nil, withType["Content-Type"] == nil { withType["Content-Type"] = "application/json" }
        let headers = withType
        return try await Blocking.run {
            let client = try HTTPTestClient(port: port)
            return try client.send(method: method, path: path, headers: headers, body: Array((body ?? "").utf8))
        }
    }

    /// The JSON body of `response`.
    static func body(_ response: HTTPTestClient.Response) throws -> Value {
        try Value.parse(response.body)
    }

    /// Expects `response` to be an API error with `status` and `code`.
    static func expectError(
        _ response: HTTPTestClient.Response, _ status: Int, _ code: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(response.status == status, "\(response.status) \(response.text)", sourceLocation: sourceLocation)
        #expect(response.headers["content-type"] == "application/json", sourceLocation: sourceLocation)
        let error = try? body(response)
        #expect(error?["code"] == .string(code), "\(response.text)", sourceLocation: sourceLocation)
        #expect(error?["message"]?.stringValue?.isEmpty == false, "\(response.text)", sourceLocation: sourceLocation)
    }

    @Test func theOpenAPIDocumentIsServedWithoutAToken() async throws {
        try await withServer(try PermissionTests.configuration()) { server in
            let answer = try await Self.ask(server, "GET", "/v1/openapi.json")
            #expect(answer.status == 200)
            #expect(answer.headers["content-type"] == "application/json")
            #expect(try Self.body(answer)["paths"]?["/v1/subjects/{name}"] != nil)
            Self.expectError(try await Self.ask(server, "POST", "/v1/openapi.json", body: "{}"), 405, "method_not_allowed")
        }
    }

    @Test func aPostIsASendThatSubscribersReceive() async throws {
        try await withServer { server in
            let subscriber = try await server.connect()
            try await subscriber.send(json(["op": "subscribe", "id": 1, "to": "prices", "demand": 10]))
            #expect(try await subscriber.next()["op"] == "subscribed")
            let answer = try await Self.ask(server, "POST", "/v1/subjects/prices", body: #"{"AAPL": 190.5}"#)
            #expect(answer.status == 200, "\(answer.text)")
            #expect(try Self.body(answer) == [:])
            #expect(answer.headers["cache-control"] == "no-store")
            #expect(try await subscriber.next() == ["op": "next", "id": 1, "value": ["AAPL": 190.5]])
            // Several requests on one keep-alive connection, in order.
            let port = server.port
            let statuses = try await Blocking.run {
                let client = try HTTPTestClient(port: port)
                return try (1...3).map { n in
                    try client.send(
                        method: "POST", path: "/v1/subjects/prices", headers: ["Content-Type": "application/json"],
                        body: Array("\(n)".utf8)).status
                }
            }
            #expect(statuses == [200, 200, 200])
            for n in 1...3 { #expect(try await subscriber.next()["value"] == .int(Int64(n))) }
        }
    }

    @Test func aDurableSubjectAnswersWithOffsetsAndEpochAndItsLatestValueCarriesAnETag() async throws {
        let directory = NSTemporaryDirectory() + "hub-http-tests-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = HubService.Configuration()
        configuration.storage = SQLiteStorage(path: directory, sync: .full)
        try await withServer(configuration, setUp: { hub in
            try hub.declareSubject("orders", history: HistoryRetention(size: 100), durable: true)
        }) { server in
            #expect(try await Self.ask(server, "GET", "/v1/subjects/orders").status == 404)
            var epoch: Value?
            for n in 1...3 {
                let answer = try await Self.ask(server, "POST", "/v1/subjects/orders", body: #"{"n": \#(n)}"#)
                #expect(answer.status == 200, "\(answer.text)")
                let body = try Self.body(answer)
                #expect(body["offset"] == .int(Int64(n)), "\(body)")
                epoch = epoch ?? body["epoch"]
                #expect(body["epoch"] == epoch && epoch?.stringValue?.isEmpty == false, "\(body)")
            }
            // NDJSON: every line sent in order, answered with the last offset.
            let lines = "{\"n\": 4}\n\n{\"n\": 5}\n"
            let batch = try await Self.ask(
                server, "POST", "/v1/subjects/orders", body: lines, headers: ["Content-Type": "application/x-ndjson"])
            #expect(batch.status == 200, "\(batch.text)")
            #expect(try Self.body(batch) == ["offset": 5, "epoch": epoch!])
            let latest = try await Self.ask(server, "GET", "/v1/subjects/orders")
            #expect(latest.status == 200)
            #expect(try Self.body(latest) == ["n": 5])
            let tag = "\"5@\(epoch!.stringValue!)\""
            #expect(latest.headers["etag"] == tag)
            let unchanged = try await Self.ask(server, "GET", "/v1/subjects/orders", headers: ["If-None-Match": tag])
            #expect(unchanged.status == 304)
            let head = try await Self.ask(server, "HEAD", "/v1/subjects/orders")
            #expect(head.status == 200 && head.body.isEmpty && head.headers["etag"] == tag)
            // What a WebSocket subscriber replays is what was acknowledged, in order.
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "orders", "demand": 10, "since": ["offset": 0, "epoch": epoch!]]))
            #expect(try await client.next()["offset"] == 5)
            #expect(try await client.values(5, id: 1) == (1...5).map { ["n": .int(Int64($0))] })
        }
    }

    @Test func aBadNDJSONLineRefusesTheWholeRequestBeforeAnyValueIsSent() async throws {
        try await withServer(setUp: { hub in
            try hub.declareSubject("orders", history: HistoryRetention(size: 100))
            try hub.declareSubject(
                "typed", schema: try JSONSchema(["type": "object", "required": ["n"]]))
        }) { server in
            let ndjson = ["Content-Type": "application/x-ndjson"]
            let bad = try await Self.ask(server, "POST", "/v1/subjects/orders", body: "{\"n\": 1}\n{\"n\": \n{\"n\": 3}\n", headers: ndjson)
            Self.expectError(bad, 400, "bad_message")
            #expect(try Self.body(bad)["data"]?["line"] == 2)
            // A line the subject's schema refuses, in the middle: nothing sent either.
            let refused = try await Self.ask(server, "POST", "/v1/subjects/typed", body: "{\"n\": 1}\n{\"m\": 2}\n{\"n\": 3}\n", headers: ndjson)
            Self.expectError(refused, 400, "invalid_value")
            #expect(try await Self.ask(server, "GET", "/v1/subjects/orders").status == 404)
            let published = try await server.withHub { hub in hub.metrics.published }
            #expect(published == 0)
            // An empty NDJSON body has no value to send.
            Self.expectError(try await Self.ask(server, "POST", "/v1/subjects/orders", body: "\n\n", headers: ndjson), 400, "bad_message")
        }
    }

    @Test func malformedRequestsGetAClearErrorEach() async throws {
        try await withServer(serviceConfiguration(maxMessageSize: 1024)) { server in
            Self.expectError(try await Self.ask(server, "POST", "/v1/subjects/prices", body: "{nope"), 400, "bad_message")
            Self.expectError(try await Self.ask(server, "POST", "/v1/subjects/prices", body: ""), 400, "bad_message")
            Self.expectError(try await Self.ask(server, "POST", "/v1/subjects/bad-name!", body: "1"), 400, "bad_message")
            Self.expectError(try await Self.ask(server, "POST", "/v1/subjects/$sys.stats", body: "1"), 403, "forbidden")
            Self.expectError(
                try await Self.ask(server, "POST", "/v1/subjects/prices", body: "a=1", headers: ["Content-Type": "application/x-www-form-urlencoded"]),
                415, "unsupported_media_type")
            Self.expectError(try await Self.ask(server, "GET", "/v1/nothing"), 404, "not_found")
            Self.expectError(try await Self.ask(server, "GET", "/v1/subjects/"), 404, "not_found")
            let put = try await Self.ask(server, "PUT", "/v1/subjects/prices", body: "1")
            Self.expectError(put, 405, "method_not_allowed")
            #expect(put.headers["allow"] == "GET, HEAD, POST, DELETE")
            Self.expectError(try await Self.ask(server, "GET", "/v1/triggers/refresh"), 405, "method_not_allowed")
            Self.expectError(try await Self.ask(server, "GET", "/v1/catalog?limit=many"), 400, "bad_message")
            Self.expectError(try await Self.ask(server, "GET", "/v1/catalog?after=zzz"), 400, "bad_message")
            Self.expectError(try await Self.ask(server, "POST", "/v1/subjects/prices/fail"), 400, "bad_message")
            // A body over the message limit: 413 before it is read, in the API's JSON form,
            // whether its length is told at once or by its chunks.
            let large = try await Self.ask(server, "POST", "/v1/subjects/prices", body: "[" + String(repeating: "1,", count: 1000) + "1]")
            Self.expectError(large, 413, "limit_exceeded")
            #expect(try Self.body(large)["data"]?["limit"] == "maxMessageBytes")
            let port = server.port
            func chunked(_ path: String) async throws -> HTTPTestClient.Response {
                try await Blocking.run {
                    let client = try HTTPTestClient(port: port)
                    let piece = String(repeating: "1,", count: 300)
                    let chunk = String(piece.utf8.count, radix: 16) + "\r\n" + piece + "\r\n"
                    try client.write(Array((
                        "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                            + "Transfer-Encoding: chunked\r\n\r\n" + chunk + chunk + chunk).utf8))
                    return try client.readResponse(method: "POST")
                }
            }
            Self.expectError(try await chunked("/v1/subjects/prices"), 413, "limit_exceeded")
            // Outside the API, the transport's own plain-text refusal.
            let outside = try await chunked("/health")
            #expect(outside.status == 413 && outside.headers["content-type"]?.hasPrefix("text/plain") == true, "\(outside.headers)")
            // The server goes on serving.
            #expect(try await Self.ask(server, "POST", "/v1/subjects/prices", body: "1").status == 200)
        }
    }

    @Test func completeFailDeleteTriggerAndTheCatalog() async throws {
        try await withServer(setUp: { hub in _ = try hub.declareTrigger("refresh") }) { server in
            let subscriber = try await server.connect()
            try await subscriber.send(json(["op": "subscribe", "id": 1, "to": "jobs", "demand": 10]))
            try await subscriber.send(json(["op": "subscribe", "id": 2, "to": "refresh", "demand": 10]))
            #expect(try await subscriber.next()["op"] == "subscribed")
            #expect(try await subscriber.next()["op"] == "subscribed")
            #expect(try await Self.ask(server, "POST", "/v1/triggers/refresh").status == 200)
            #expect(try await subscriber.next()["id"] == 2)
            let keyed = try await Self.ask(server, "POST", "/v1/triggers/refresh", body: #""eu""#)
            #expect(keyed.status == 200, "\(keyed.text)")
            #expect(try await subscriber.next()["id"] == 2)
            Self.expectError(try await Self.ask(server, "POST", "/v1/triggers/jobs"), 404, "not_found")
            #expect(try await Self.ask(server, "POST", "/v1/subjects/jobs/fail", body: #"{"reason": "disk"}"#).status == 200)
            let failed = try await subscriber.next()
            #expect(failed["op"] == "error" && failed["id"] == 1 && failed["code"] == "failed", "\(failed)")
            Self.expectError(try await Self.ask(server, "POST", "/v1/subjects/jobs", body: "1"), 409, "completed")
            #expect(try await Self.ask(server, "DELETE", "/v1/subjects/jobs").status == 200)
            #expect(try await Self.ask(server, "POST", "/v1/subjects/jobs", body: "1").status == 200)
            #expect(try await Self.ask(server, "POST", "/v1/subjects/jobs/complete").status == 200)
            Self.expectError(try await Self.ask(server, "POST", "/v1/subjects/jobs/complete"), 409, "completed")
            Self.expectError(try await Self.ask(server, "DELETE", "/v1/subjects/never"), 404, "not_found")
            // The catalog, paged as over WebSocket.
            let catalog = try Self.body(try await Self.ask(server, "GET", "/v1/catalog"))
            #expect(catalog["op"] == nil && catalog["ack"] == nil)
            #expect(catalog["subjects"]?.arrayValue?.contains { $0["name"] == "jobs" } == true, "\(catalog)")
            #expect(catalog["triggers"]?.arrayValue?.contains { $0["name"] == "refresh" } == true, "\(catalog)")
            let page = try Self.body(try await Self.ask(server, "GET", "/v1/catalog?limit=1"))
            let next = try #require(page["next"]?.stringValue, "\(page)")
            let rest = try await Self.ask(server, "GET", "/v1/catalog?after=\(next)")
            #expect(rest.status == 200, "\(rest.text)")
        }
    }

    @Test func tokensAndPermissionsAreTheWebSocketOnes() async throws {
        try await withServer(try PermissionTests.configuration()) { server in
            let writer = ["Authorization": "Bearer writer-secret"]
            let none = try await Self.ask(server, "POST", "/v1/subjects/prices.a", body: "1")
            Self.expectError(none, 401, "unauthorized")
            #expect(none.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
            Self.expectError(
                try await Self.ask(server, "POST", "/v1/subjects/prices.a", body: "1", headers: ["Authorization": "Bearer wrong"]),
                401, "unauthorized")
            #expect(try await Self.ask(server, "POST", "/v1/subjects/prices.a", body: "1", headers: writer).status == 200)
            let forbidden = try await Self.ask(server, "POST", "/v1/subjects/prices.locked", body: "1", headers: writer)
            Self.expectError(forbidden, 403, "forbidden")
            #expect(try Self.body(forbidden)["data"]?["permission"] == "publish")
            Self.expectError(try await Self.ask(server, "DELETE", "/v1/subjects/orders.a", headers: writer), 403, "forbidden")
            #expect(try await Self.ask(server, "POST", "/v1/triggers/refresh", headers: writer).status == 200)
            Self.expectError(try await Self.ask(server, "GET", "/v1/subjects/prices.a", headers: writer), 403, "forbidden")
            let reader = ["Authorization": "Bearer reader-secret"]
            let read = try await Self.ask(server, "GET", "/v1/subjects/prices.a", headers: reader)
            #expect(read.status == 404, "\(read.text)")  // a plain subject keeps no value
            Self.expectError(try await Self.ask(server, "POST", "/v1/subjects/prices.a", body: "1", headers: reader), 403, "forbidden")
            Self.expectError(try await Self.ask(server, "GET", "/v1/subjects/$sys.stats", headers: reader), 403, "forbidden")
            let stats = try await Self.ask(server, "GET", "/v1/subjects/$sys.stats", headers: ["Authorization": "Bearer operator-secret"])
            #expect(stats.status == 200, "\(stats.text)")
            // The catalog shows a reader only what it may see.
            let catalog = try Self.body(try await Self.ask(server, "GET", "/v1/catalog", headers: reader))
            let names = catalog["subjects"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
            #expect(names.allSatisfy { $0.hasPrefix("prices.") || $0.hasPrefix("orders.") || $0 == "view" }, "\(names)")
        }
    }

    @Test func rateAndConnectionLimitsApply() async throws {
        var session = SessionConfiguration()
        session.inboundRate = InboundRateLimits(messagesPerSecond: 5)
        try await withServer(serviceConfiguration(session: session, maxConnections: 1)) { server in
            let lines = (1...200).map { "\($0)" }.joined(separator: "\n")
            let flood = try await Self.ask(
                server, "POST", "/v1/subjects/prices", body: lines, headers: ["Content-Type": "application/x-ndjson"])
            Self.expectError(flood, 429, "limit_exceeded")
            #expect(flood.headers["retry-after"] != nil)
            // The one connection the server takes is a WebSocket client's: a request waits its turn.
            let holder = try await server.connect()
            Self.expectError(try await Self.ask(server, "POST", "/v1/subjects/prices", body: "1"), 503, "limit_exceeded")
            try await holder.close()
            #expect(try await Self.publishesAgain(server))
        }
    }

    /// Whether a `POST` to `prices` is answered `200` within about two seconds, asked
    /// every 10 ms (a place freed by a closed connection is freed on the server's loop).
    static func publishesAgain(_ server: HubServerHarness) async throws -> Bool {
        for _ in 0..<200 {
            if try await ask(server, "POST", "/v1/subjects/prices", body: "1").status == 200 { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    @Test func aPublisherToASubjectThatBlocksWaitsForItsSubscribersAndNothingIsLost() async throws {
        try await withServer(PublisherBackPressureTests.configuration(), setUp: PublisherBackPressureTests.declareJobs) { server in
            let subscriber = try await server.connect()
            try await subscriber.send(json(["op": "subscribe", "id": 1, "to": "jobs", "demand": 2]))
            #expect(try await subscriber.next()["op"] == "subscribed")
            let lines = (1...200).map { "\($0)" }.joined(separator: "\n")
            let publish = Task {
                try await Self.ask(server, "POST", "/v1/subjects/jobs", body: lines, headers: ["Content-Type": "application/x-ndjson"])
            }
            #expect(try await subscriber.values(2, id: 1) == [1, 2])
            // The subscriber's buffer (8) is full: the request's next values wait.
            #expect(try await server.eventually { hub in
                guard case .subject(let subject) = hub.entry(named: "jobs") else { return false }
                return subject.congestion.isCongested
            })
            let published = try await server.withHub { hub -> Int in
                guard case .subject(let subject) = hub.entry(named: "jobs") else { return -1 }
                return subject.counters.published
            }
            #expect(published < 200, "published \(published)")
            try await subscriber.send(json(["op": "request", "id": 1, "n": 198]))
            #expect(try await subscriber.values(198, id: 1) == (3...200).map { Value.int(Int64($0)) })
            let answer = try await publish.value
            #expect(answer.status == 200, "\(answer.text)")
            #expect(try await server.withHub { hub in hub.metrics.dropped + hub.metrics.overflows } == 0)
        }
    }

    @Test func aClientsRateLimitCarriesOverFromOneRequestToTheNext() async throws {
        var session = SessionConfiguration()
        session.inboundRate = InboundRateLimits(messagesPerSecond: 1)
        try await withServer(serviceConfiguration(session: session)) { server in
            // One value a second: of twenty requests one after the other, most are refused.
            var statuses: [Int] = []
            for n in 1...20 { statuses.append(try await Self.ask(server, "POST", "/v1/subjects/prices", body: "\(n)").status) }
            #expect(statuses.first == 200)
            #expect(statuses.filter { $0 == 429 }.count >= 10, "\(statuses)")
            #expect(Set(statuses).isSubset(of: [200, 429]), "\(statuses)")
        }
    }

    @Test func theAPIServesOnSeveralEventLoops() async throws {
        var configuration = HubService.Configuration()
        configuration.eventLoops = 3
        try await withServer(configuration, setUp: { hub in
            try hub.declareSubject("orders", history: HistoryRetention(size: 100))
        }) { server in
            // Connections go to the loops in turn: requests on each reach the hub's loop.
            for n in 1...6 {
                let answer = try await Self.ask(server, "POST", "/v1/subjects/orders", body: "\(n)")
                #expect(try Self.body(answer)["offset"] == .int(Int64(n)), "\(answer.text)")
            }
            #expect(try Self.body(try await Self.ask(server, "GET", "/v1/subjects/orders")) == 6)
            Self.expectError(try await Self.ask(server, "POST", "/v1/subjects/orders", body: "{"), 400, "bad_message")
        }
    }

    /// The `curl` executable, if installed.
    static let curl = ["/usr/bin/curl", "/usr/local/bin/curl", "/bin/curl"].first(where: FileManager.default.isExecutableFile)

    @Test(.enabled(if: curl != nil, "curl is not installed (scripts/dev installs it)"))
    func curlPublishesAndReads() async throws {
        let curl = try #require(Self.curl)
        try await withServer(setUp: { hub in
            try hub.declareSubject("orders", history: HistoryRetention(size: 100))
        }) { server in
            let base = "http://127.0.0.1:\(server.port)/v1/subjects/orders"
            let posted = try await Self.run(curl, ["-sS", "-H", "Content-Type: application/json", "-d", #"{"qty": 5}"#, base])
            #expect(posted.status == 0)
            let answer = try Value.parse(posted.output)
            #expect(answer["offset"] == 1, "\(posted.output)")
            let read = try await Self.run(curl, ["-sS", "-i", base])
            #expect(read.output.contains("HTTP/1.1 200"), "\(read.output)")
            #expect(read.output.lowercased().contains("etag: \"1@"), "\(read.output)")
            #expect(read.output.hasSuffix("{\"qty\":5}\n"), "\(read.output)")
        }
    }

    /// Runs `executable` with `arguments`: its exit status and standard output.
    static func run(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await Blocking.run {
            let process = ChildProcess()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }
}
