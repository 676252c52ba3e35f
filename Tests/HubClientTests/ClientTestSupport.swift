import Foundation
import NetworkTestSupport
import RemoteTestSupport
import HubClient
import HubEngine
import HubValue
import HubWire
import HubServer
import HubTransport

/// A client configuration for tests: short timeouts, fast reconnects.
func testConfiguration(reconnect: ReconnectPolicy = .disabled) -> HubClient.Configuration {
    HubClient.Configuration(
        connectTimeout: .seconds(5), requestTimeout: .seconds(10), reconnect: reconnect)
}

/// Starts a hub service on 127.0.0.1 (`port` 0: an ephemeral one).
func startService(port: Int = 0) async throws -> (HubService, Int) {
    let service = try HubService(configuration: .init(host: "127.0.0.1", port: port))
    let bound = try await service.start()
    return (service, bound)
}

/// The subscriber count of the subject `name` in `catalog` (nil when absent).
func subscribers(of name: String, in catalog: Catalog) -> Int? {
    catalog.subjects.first { $0.name == name }?.subscribers
        ?? catalog.pipelines.first { $0.name == name }?.subscribers
        ?? catalog.triggers.first { $0.name == name }?.subscribers
}

/// A service and a connected client; both are stopped after `body`.
func withServiceAndClient(
    configuration: HubClient.Configuration = testConfiguration(),
    _ body: (HubService, Int, HubClient) async throws -> Void
) async throws {
    let (service, port) = try await startService()
    let client = try HubClient(url: "ws://127.0.0.1:\(port)/", configuration: configuration)
    do {
        try await client.connect()
        try await body(service, port, client)
    } catch {
        await client.close()
        await service.shutdown()
        throw error
    }
    await client.close()
    await service.shutdown()
}

/// Asks the server for the catalog until the subject `name` has `count` subscribers
/// (each round trip is bounded by the client's request timeout; the whole wait by `timeout`).
func waitForSubscribers(_ count: Int, of name: String, client: HubClient, timeout: Duration = .seconds(10)) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while subscribers(of: name, in: try await client.list()) ?? 0 != count {
        guard clock.now < deadline else { throw TimedOut(what: "\(count) subscribers of \(name)") }
        await Task.yield()
    }
}
