import Foundation
import HubClient
import HubCore
import HubServer
import HubTransport

/// A wait that did not end in time.
struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// A thread-safe queue of events that a test awaits one at a time, each wait
/// bounded by a timeout (no sleeps: the timeout only ends a wait that failed).
final class Events<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer: [Element] = []
    private var waiter: (id: UInt64, continuation: CheckedContinuation<Element?, Never>)?
    private var nextID: UInt64 = 0

    /// Queues `element`, or hands it to the waiting test.
    func push(_ element: Element) {
        lock.lock()
        if let waiter {
            self.waiter = nil
            lock.unlock()
            waiter.continuation.resume(returning: element)
            return
        }
        buffer.append(element)
        lock.unlock()
    }

    /// The next event; throws ``TimedOut`` after `timeout`.
    func next(timeout: Duration = .seconds(10), _ what: String = "an event") async throws -> Element {
        let element: Element? = await withCheckedContinuation { continuation in
            lock.lock()
            if !buffer.isEmpty {
                let first = buffer.removeFirst()
                lock.unlock()
                continuation.resume(returning: first)
                return
            }
            precondition(waiter == nil, "one waiter at a time")
            nextID += 1
            let id = nextID
            waiter = (id, continuation)
            lock.unlock()
            Task {
                try? await Task.sleep(for: timeout)
                self.expire(id)
            }
        }
        guard let element else { throw TimedOut(what: what) }
        return element
    }

    private func expire(_ id: UInt64) {
        lock.lock()
        guard let waiter, waiter.id == id else {
            lock.unlock()
            return
        }
        self.waiter = nil
        lock.unlock()
        waiter.continuation.resume(returning: nil)
    }
}

/// What a remote subscription delivered.
enum Recorded: Sendable, Equatable {
    case value(Value)
    case finished
    case failed(HubClientError)
}

/// A subscriber of a remote subscription that records its events and asks for unlimited demand.
final class Recorder: Subscriber, @unchecked Sendable {
    typealias Input = Value
    typealias Failure = HubClientError

    let events = Events<Recorded>()
    private let lock = NSLock()
    private var subscription: (any Subscription)?
    private let initialDemand: Subscribers.Demand

    /// A recorder that asks for `demand` when subscribed (more with ``request(_:)``).
    init(demand: Subscribers.Demand = .unlimited) {
        initialDemand = demand
    }

    func receive(subscription: any Subscription) {
        lock.lock()
        self.subscription = subscription
        lock.unlock()
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    /// Asks for `demand` more values.
    func request(_ demand: Subscribers.Demand) {
        lock.lock()
        let current = subscription
        lock.unlock()
        current?.request(demand)
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

    /// The next value; throws ``TimedOut`` after 10 s, or when the subscription ended instead.
    func next(_ what: String = "a value") async throws -> Value {
        switch try await events.next(what) {
        case let .value(value): return value
        case let other: throw UnexpectedEvent(event: other, expected: what)
        }
    }

    /// Cancels the subscription.
    func cancel() {
        lock.lock()
        let current = subscription
        lock.unlock()
        current?.cancel()
    }
}

/// A subscription ended while a value was expected.
struct UnexpectedEvent: Error {
    var event: Recorded
    var expected: String
}

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
    static func with(_ name: String, _ body: (Scenario) async throws -> Void) async throws {
        let scenario = try await start(name)
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
    private static func start(_ name: String) async throws -> Scenario {
        let broker = try BrokerConfiguration.load(contentsOf: configurationPath(name))
        var configuration = broker.service
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let service = try HubService(configuration: configuration)
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
