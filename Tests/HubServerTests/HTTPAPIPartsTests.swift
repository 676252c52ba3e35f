@testable import HubServer
import HubTransport
import HubValue
import HubWire
import Testing

/// The HTTP API's parts without a socket: routes, resume positions, bodies and the
/// limiters kept across requests.
@Suite("HTTP API parts")
struct HTTPAPIPartsTests {
    @Test func routesAreReadFromTheMethodAndThePath() {
        #expect(APIRoute.match(method: "POST", path: "/v1/subjects/a.b") == .route(.publish(subject: "a.b")))
        #expect(APIRoute.match(method: "HEAD", path: "/v1/subjects/a") == .route(.latest(subject: "a")))
        #expect(APIRoute.match(method: "POST", path: "/v1/subjects/a/fail") == .route(.fail(subject: "a")))
        #expect(APIRoute.match(method: "GET", path: "/v1/subjects/a/events") == .route(.events(.subject("a"))))
        #expect(APIRoute.match(method: "GET", path: "/v1/pipelines/p/events") == .route(.events(.pipeline("p"))))
        #expect(APIRoute.match(method: "GET", path: "/v1/events") == .route(.events(.adHoc)))
        #expect(APIRoute.match(method: "POST", path: "/v1/subjects/a/events") == .methodNotAllowed(allowed: ["GET"]))
        #expect(APIRoute.match(method: "GET", path: "/v1/pipelines/p") == .notFound)
        #expect(APIRoute.match(method: "GET", path: "/v1/subjects/a/b/c") == .notFound)
        #expect(APIRoute.match(method: "GET", path: "/metrics") == .notAPI)
    }

    @Test func anEventIDIsAResumePosition() throws {
        #expect(try SSESubscription.position("42@e1", "id") == ["offset": 42, "epoch": "e1"])
        #expect(try SSESubscription.position("7", "id") == ["offset": 7])
        for bad in ["", "@e", "x@e", "-1@e", "5@", "9007199254740992@e"] {
            #expect(throws: HubError.self, "\(bad)") { try SSESubscription.position(bad, "id") }
        }
        let request = HTTPRequest(
            method: "GET", path: "/v1/subjects/a/events", query: [.init(name: "last", value: "3"), .init(name: "demand", value: "2")],
            headers: [.init("last-event-id", "5@e")])
        let fields = try SSESubscription.fields(of: request)
        #expect(fields["since"] == ["offset": 5, "epoch": "e"])
        #expect(fields["demand"] == 2)
    }

    @Test func ndjsonNamesItsFirstBadLine() throws {
        #expect(try APIBody.values(Array("1\n\n[2]\r\n".utf8)) == [1, [2]])
        do {
            _ = try APIBody.values(Array("1\n{\n3".utf8))
            Issue.record("a bad line was accepted")
        } catch {
            #expect(error.data?["line"] == 2)
        }
    }

    @Test func aLimiterCarriesOverAndTheTableStaysBounded() {
        let limits = InboundRateLimits(messagesPerSecond: 1)
        let table = HTTPRateLimits()
        var limiter = table.limiter(for: "a", limits: limits, now: 0)
        #expect(limiter.admit(bytes: 1, now: 0) == nil)
        table.keep(limiter, for: "a", now: 0)
        var again = table.limiter(for: "a", limits: limits, now: 1)
        #expect(again.admit(bytes: 1, now: 1) != nil)
        // Other limits: a fresh limiter.
        var changed = table.limiter(for: "a", limits: InboundRateLimits(messagesPerSecond: 5), now: 1)
        #expect(changed.admit(bytes: 1, now: 1) == nil)
        for n in 0..<HTTPRateLimits.capacity { table.keep(limiter, for: "k\(n)", now: 2) }
        #expect(table.count == HTTPRateLimits.capacity)
        // A second later every limiter is full again: they make room for newcomers.
        table.keep(limiter, for: "new", now: 2 + 1_000_000_000)
        #expect(table.count == 1)
    }
}
