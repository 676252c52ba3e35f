import Foundation
import NetworkTestSupport
import HubClient
import HubEngine
import HubValue
import HubWire
import HubServer
import HubTransport

/// What a recording subscriber saw.
enum Recorded: Sendable, Equatable {
    case value(Value)
    case finished
    case failed(HubClientError)

    var failure: HubClientError? {
        if case let .failed(error) = self { return error }
        return nil
    }
}

/// A subscriber of a ``HubPublisher`` that records events (on the loop) and lets the
/// test request more or cancel.
final class Recorder: Subscriber, @unchecked Sendable {
    typealias Input = Value
    typealias Failure = HubClientError

    let events = EventQueue<Recorded>()
    let initialDemand: Subscribers.Demand
    private let lock = NSLock()
    private var subscription: (any Subscription)?

    init(demand: Subscribers.Demand) {
        initialDemand = demand
    }

    func receive(subscription: any Subscription) {
        lock.lock()
        self.subscription = subscription
        lock.unlock()
        if initialDemand != .none { subscription.request(initialDemand) }
    }

    func receive(_ input: Value) -> Subscribers.Demand {
        events.push(.value(input))
        return .none
    }

    func receive(completion: Subscribers.Completion<HubClientError>) {
        switch completion {
        case .finished: events.push(.finished)
        case let .failure(error): events.push(.failed(error))
        }
    }

    private var current: (any Subscription)? {
        lock.lock()
        defer { lock.unlock() }
        return subscription
    }

    /// Requests more (hops to the loop).
    func request(_ demand: Subscribers.Demand) { current?.request(demand) }

    /// Cancels (hops to the loop).
    func cancel() { current?.cancel() }
}

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
