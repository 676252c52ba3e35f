import Foundation
import HubServer
import HubValue
import NetworkTestSupport
import Testing

/// The HTTP API and pages of other origins (`http.cors.origins`): allowed origins get
/// `Access-Control-Allow-Origin` on answers and streams and their preflights a `204`;
/// others, and every origin on a server that allows none, get no such header and a
/// `403` preflight.
@Suite("HTTP API: cross-origin requests", .serialized)
struct HTTPAPICrossOriginTests {
    private static func configuration(_ origins: [String]) -> HubService.Configuration {
        var configuration = HubService.Configuration()
        configuration.crossOrigin = CrossOriginPolicy(origins: origins)
        return configuration
    }

    private static let preflight = [
        "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, authorization",
    ]

    @Test func anAllowedOriginsPreflightAndRequestsCarryItsOrigin() async throws {
        try await withServer(Self.configuration(["https://app.example", "http://localhost:3000"])) { server in
            let allowed = try await HTTPAPIPublishTests.ask(server, "OPTIONS", "/v1/subjects/orders", headers: Self.preflight)
            #expect(allowed.status == 204, "\(allowed.status) \(allowed.text)")
            #expect(allowed.headers["access-control-allow-origin"] == "https://app.example")
            #expect(allowed.headers["access-control-allow-methods"]?.contains("POST") == true)
            #expect(allowed.headers["access-control-allow-headers"]?.contains("Authorization") == true)

            let post = try await HTTPAPIPublishTests.ask(
                server, "POST", "/v1/subjects/orders", body: #"{"qty":1}"#, headers: ["Origin": "https://app.example"])
            #expect(post.status == 200)
            #expect(post.headers["access-control-allow-origin"] == "https://app.example")
            #expect(post.headers["vary"] == "Origin")
            // Listed by name, the origin may send credentials (an EventSource's cookie).
            #expect(allowed.headers["access-control-allow-credentials"] == "true")
            #expect(post.headers["access-control-allow-credentials"] == "true")
            // An error answer carries it too: the page can read why.
            let refused = try await HTTPAPIPublishTests.ask(
                server, "POST", "/v1/subjects/orders", body: "{", headers: ["Origin": "http://localhost:3000"])
            HTTPAPIPublishTests.expectError(refused, 400, "bad_message")
            #expect(refused.headers["access-control-allow-origin"] == "http://localhost:3000")

            var other = Self.preflight
            other["Origin"] = "https://evil.example"
            let denied = try await HTTPAPIPublishTests.ask(server, "OPTIONS", "/v1/subjects/orders", headers: other)
            HTTPAPIPublishTests.expectError(denied, 403, "forbidden")
            #expect(denied.headers["access-control-allow-origin"] == nil)
            let fromOther = try await HTTPAPIPublishTests.ask(
                server, "GET", "/v1/subjects/orders", headers: ["Origin": "https://evil.example"])
            #expect(fromOther.headers["access-control-allow-origin"] == nil)
            #expect(fromOther.headers["vary"] == "Origin")
        }
    }

    @Test func anEventStreamsHeadCarriesTheAllowedOrigin() async throws {
        try await withServer(Self.configuration(["*"])) { server in
            let stream = try await HTTPAPIEventsTests.Stream(
                server, "/v1/subjects/ticks/events", headers: ["Origin": "https://any.example"])
            let head = stream.head
            #expect(head.status == 200)
            #expect(head.headers["access-control-allow-origin"] == "*")
            #expect(head.headers["access-control-allow-credentials"] == nil)
            #expect(head.headers["content-type"]?.hasPrefix("text/event-stream") == true)
        }
    }

    @Test func byDefaultNoOtherOriginIsAllowed() async throws {
        try await withServer { server in
            let preflight = try await HTTPAPIPublishTests.ask(server, "OPTIONS", "/v1/subjects/orders", headers: Self.preflight)
            HTTPAPIPublishTests.expectError(preflight, 403, "forbidden")
            #expect(preflight.headers["access-control-allow-origin"] == nil)
            let post = try await HTTPAPIPublishTests.ask(
                server, "POST", "/v1/subjects/orders", body: "1", headers: ["Origin": "https://app.example"])
            #expect(post.status == 200)
            #expect(post.headers["access-control-allow-origin"] == nil)
            #expect(post.headers["vary"] == nil)
        }
    }
}
