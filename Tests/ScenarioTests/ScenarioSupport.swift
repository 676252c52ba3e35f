import Foundation
import NetworkTestSupport
import RemoteTestSupport
import HubClient
import HubEngine
import HubTesting
import HubValue
import HubServer
import HubTransport


/// A scenario of `examples/`: its `hub.yml` loaded with ``BrokerConfiguration``,
/// a real ``HubService`` on 127.0.0.1 with an ephemeral port, and a connected client.
final class Scenario {
    let service: HubService
    let client: HubClient
    let port: Int
    /// The other clients connected with ``connectAnother()``, closed by ``stop()``.
    private var others: [HubClient] = []

    private init(service: HubService, client: HubClient, port: Int) {
        self.service = service
        self.client = client
        self.port = port
    }

    /// Runs `body` with the scenario `name` started, and stops it afterwards, also when `body` throws.
    /// The broker logs into `log` when given.
    static func with(_ name: String, log: LogRecorder? = nil, _ body: (Scenario) async throws -> Void) async throws {
        let scenario = try await start(name, log: log)
        do {
            try await body(scenario)
        } catch {
            await scenario.stop()
            throw error
        }
        await scenario.stop()
    }

    /// The path of `examples/<name>/hub.yml` in the package.
    static func configurationPath(_ name: String) -> String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("examples").appendingPathComponent(name).appendingPathComponent("hub.yml").path
    }

    /// Starts the broker of scenario `name` and connects a client.
    private static func start(_ name: String, log: LogRecorder?) async throws -> Scenario {
        let broker = try BrokerConfiguration.load(contentsOf: configurationPath(name))
        var configuration = broker.service
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let service = try log.map { try HubService(configuration: configuration, logger: $0.logger()) }
            ?? HubService(configuration: configuration)
        let port = try await service.start { hub in try broker.declare(in: hub) }
        let client = try await connect(port)
        return Scenario(service: service, client: client, port: port)
    }

    /// Another client of the same broker (a second user or screen).
    func connectAnother() async throws -> HubClient {
        let other = try await Scenario.connect(port)
        others.append(other)
        return other
    }

    private static func connect(_ port: Int) async throws -> HubClient {
        let client = try HubClient(url: "ws://127.0.0.1:\(port)/", configuration: HubClient.Configuration(
            connectTimeout: .seconds(5), requestTimeout: .seconds(10), reconnect: .disabled))
        try await client.connect()
        return client
    }

    /// Subscribes `to` a name, asking for `demand` (unlimited by default).
    func subscribe(_ name: String, client: HubClient? = nil, demand: Subscribers.Demand = .unlimited) -> Recorder {
        let recorder = Recorder(demand: demand)
        (client ?? self.client).subscribe(to: name).subscribe(recorder)
        return recorder
    }

    /// Asks the broker for its catalog until the named pipeline has `count`
    /// subscribers (each round trip bounded by the client's request timeout, the whole wait by `timeout`).
    func waitForPipelineSubscribers(_ count: Int, of name: String, timeout: Duration = .seconds(10)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while try await client.list().pipelines.first(where: { $0.name == name })?.subscribers ?? 0 != count {
            guard clock.now < deadline else { throw TimedOut(what: "\(count) subscribers of \(name)") }
            await Task.yield()
        }
    }

    /// Closes the clients and stops the broker.
    func stop() async {
        for other in others { await other.close() }
        others = []
        await client.close()
        await service.shutdown()
    }
}

/// Parses JSON text into a ``Value`` (expected values written as JSON).
func json(_ text: String) throws -> Value {
    try Value.parse(text)
}
