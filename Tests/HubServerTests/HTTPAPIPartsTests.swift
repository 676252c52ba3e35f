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

    /// An event stream's credentials: the header, else `?token=`, else the `hub_token`
    /// cookie, read as RFC 6265 writes cookies.
    @Test func anEventStreamsTokenComesFromTheHeaderTheQueryOrTheCookie() {
        func credentials(query: [HTTPRequest.QueryItem] = [], _ headers: [HTTPRequest.Header]) -> String? {
            let request = HTTPRequest(
                method: "GET", path: "/v1/subjects/a/events", query: query,
                authorization: headers.first { $0.name == "authorization" }?.value, headers: headers)
            return SSERequestHandler.credentials(of: request)
        }
        #expect(credentials([.init("cookie", "theme=dark; hub_token=abc.def-ghi_; other=1")]) == "Bearer abc.def-ghi_")
        #expect(credentials([.init("cookie", "hub_token=\"quoted\"")]) == "Bearer quoted")
        #expect(credentials([.init("cookie", "theme=dark"), .init("cookie", " hub_token = second ")]) == "Bearer second")
        #expect(credentials([.init("cookie", "hub_token=; HUB_TOKEN=x; hub_tokens=y; xhub_token=z")]) == nil)
        #expect(credentials([.init("cookie", "hub_token")]) == nil)
        #expect(credentials(query: [.init(name: "token", value: "q")], [.init("cookie", "hub_token=c")]) == "Bearer q")
        #expect(credentials(
            query: [.init(name: "token", value: "q")],
            [.init("authorization", "Bearer h"), .init("cookie", "hub_token=c")]) == "Bearer h")
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

/// The OpenAPI document the API serves (Protocol/openapi.json) and the routes agree: every
/// path and method it documents is a route of the API, and every route's path and method
/// is documented.
@Suite("HTTP API: the OpenAPI document")
struct HTTPAPIOpenAPIDocumentTests {
    /// The routes, as (method, path with a sample name) pairs, by the document's path.
    static let routes: [String: [String]] = [
        "/v1/subjects/{name}": ["get", "post", "delete"],
        "/v1/subjects/{name}/complete": ["post"],
        "/v1/subjects/{name}/fail": ["post"],
        "/v1/triggers/{name}": ["post"],
        "/v1/catalog": ["get"],
        "/v1/subjects/{name}/events": ["get"],
        "/v1/pipelines/{name}/events": ["get"],
        "/v1/triggers/{name}/events": ["get"],
        "/v1/events": ["get"],
        "/v1/openapi.json": ["get"],
    ]

    @Test func everyDocumentedOperationIsARouteAndEveryRouteIsDocumented() throws {
        let document = try Value.parse(ServiceRoutes.openAPIDocument().body)
        #expect(document["openapi"]?.stringValue?.hasPrefix("3.") == true)
        guard case .object(let paths)? = document["paths"] else {
            Issue.record("no paths")
            return
        }
        var documented: [String: [String]] = [:]
        for (path, item) in paths {
            guard case .object(let operations) = item else { continue }
            documented[path] = operations.keys.filter { ["get", "post", "delete", "put", "patch"].contains($0) }.sorted()
        }
        #expect(documented == Self.routes.mapValues { $0.sorted() })
        for (path, methods) in documented {
            let concrete = path.replacingOccurrences(of: "{name}", with: "orders.a")
            for method in methods {
                let match = APIRoute.match(method: method.uppercased(), path: concrete)
                guard case .route = match else {
                    Issue.record("\(method.uppercased()) \(concrete) is documented but is \(match)")
                    continue
                }
            }
        }
    }
}
