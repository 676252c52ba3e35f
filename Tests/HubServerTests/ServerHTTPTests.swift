import Foundation
import NetworkTestSupport
import HubServer
import HubTransport
import Synchronization
import Testing

/// The broker's plain HTTP endpoints beside WebSocket on its port, and on the admin
/// listener when one is configured: real services, real sockets.
@Suite("Server HTTP endpoints", .serialized)
struct ServerHTTPTests {
    @Test func healthAndReadyAnswerOnTheWebSocketPortWhileItServes() async throws {
        let harness = try await HubServerHarness()
        defer { Task { await harness.stop() } }
        let health = try await HTTPTestClient.request(port: harness.port, path: "/health")
        #expect(health.status == 200)
        #expect(health.text == "ok\n")
        #expect(health.headers["cache-control"] == "no-store")
        let ready = try await HTTPTestClient.request(port: harness.port, path: "/ready")
        #expect(ready.status == 200)
        #expect(ready.text == "ready\n")
        #expect(try await HTTPTestClient.request(port: harness.port, path: "/nope").status == 404)
        // WebSocket on the same port.
        let client = try await harness.connect()
        #expect(client.welcome["op"] == "welcome")
    }

    @Test func aReadinessCheckThatFailsMakesReady503WithItsReason() async throws {
        let harness = try await HubServerHarness()
        defer { Task { await harness.stop() } }
        let reachable = Atomic<Bool>(false)
        try await harness.service.addReadinessCheck(named: "nats") {
            reachable.load(ordering: .relaxed) ? nil : "unreachable"
        }
        let down = try await HTTPTestClient.request(port: harness.port, path: "/ready")
        #expect(down.status == 503)
        #expect(down.text == "not ready: nats: unreachable\n")
        #expect(try await HTTPTestClient.request(port: harness.port, path: "/health").status == 200)
        reachable.store(true, ordering: .relaxed)
        #expect(try await HTTPTestClient.request(port: harness.port, path: "/ready").status == 200)
    }

    @Test func anAdminListenerServesTheOperatorsAndTheMainPortKeepsProbes() async throws {
        var configuration = HubService.Configuration()
        configuration.admin = .init(host: "127.0.0.1", port: 0)
        let harness = try await HubServerHarness(configuration)
        defer { Task { await harness.stop() } }
        let adminPort = await harness.service.adminPort
        #expect(adminPort > 0)
        #expect(adminPort != harness.port)
        for port in [harness.port, adminPort] {
            #expect(try await HTTPTestClient.request(port: port, path: "/health").status == 200)
            #expect(try await HTTPTestClient.request(port: port, path: "/ready").status == 200)
        }
        // The operators' paths are on the admin listener only.
        #expect(try await HTTPTestClient.request(port: harness.port, path: "/metrics").status == 404)
        #expect(try await HTTPTestClient.request(port: harness.port, path: "/dashboard/").status == 404)
        #expect(try await HTTPTestClient.request(port: adminPort, path: "/metrics").status == 200)
        #expect(try await HTTPTestClient.request(port: adminPort, path: "/dashboard/").status == 200)
        let statistics = await harness.service.statistics
        #expect(statistics.connections == 0)
    }

    @Test func theDashboardIsServedFromTheBinaryAndIsUpToDateWithItsFiles() async throws {
        let harness = try await HubServerHarness()
        defer { Task { await harness.stop() } }
        let root = HubCLIExecutable.packageRoot
        let files = [
            ("/dashboard/", "Dashboard/index.html", "text/html"),
            ("/dashboard/dashboard.js", "Dashboard/dashboard.js", "text/javascript"),
            ("/dashboard/dashboard.css", "Dashboard/dashboard.css", "text/css"),
            ("/dashboard/hub.js", "clients/js/hub.js", "text/javascript"),
        ]
        for (path, file, type) in files {
            let response = try await HTTPTestClient.request(port: harness.port, path: path)
            #expect(response.status == 200, "\(path)")
            #expect(response.headers["content-type"]?.hasPrefix(type) == true, "\(path)")
            let onDisk = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            #expect(response.text == onDisk, "\(path) is not \(file)")
        }
        let root302 = try await HTTPTestClient.request(port: harness.port, path: "/")
        #expect(root302.status == 302)
        #expect(root302.headers["location"] == "/dashboard/")
        #expect(try await HTTPTestClient.request(port: harness.port, path: "/dashboard/nothing.js").status == 404)
    }

    @Test func theJSClientIsServedForPagesToImportOnEveryListener() async throws {
        var configuration = HubService.Configuration()
        configuration.admin = .init(host: "127.0.0.1", port: 0)
        let harness = try await HubServerHarness(configuration)
        defer { Task { await harness.stop() } }
        let adminPort = await harness.service.adminPort
        let onDisk = try String(
            contentsOf: HubCLIExecutable.packageRoot.appendingPathComponent("clients/js/hub.js"), encoding: .utf8)
        #expect(onDisk.contains("export class Hub"))
        // On the WebSocket port even with an admin listener: it is that port's client.
        for port in [harness.port, adminPort] {
            let response = try await HTTPTestClient.request(
                port: port, path: "/client/hub.js", headers: ["Origin": "https://app.example"])
            #expect(response.status == 200, "port \(port)")
            #expect(response.headers["content-type"] == "text/javascript; charset=utf-8", "port \(port)")
            #expect(response.headers["access-control-allow-origin"] == "*", "port \(port)")
            #expect(response.headers["x-content-type-options"] == "nosniff", "port \(port)")
            #expect(response.text == onDisk, "/client/hub.js is not clients/js/hub.js")
        }
        #expect(try await HTTPTestClient.request(port: harness.port, path: "/client/").status == 404)
        #expect(try await HTTPTestClient.request(port: harness.port, path: "/client/hub.d.ts").status == 404)
    }
}
