import Foundation
import HubClient
import HubCore
import HubServer
import HubTransport

/// A wait that did not finish in time.
struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// A thread-safe FIFO that loop-thread code pushes into and tests await, every wait
/// bounded by a timeout.
final class Events<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer: [Element] = []
    private var waiter: (id: UInt64, continuation: CheckedContinuation<Element?, Never>)?
    private var nextID: UInt64 = 0

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

    /// Everything received so far, without waiting.
    func drain() -> [Element] {
        lock.lock()
        defer { lock.unlock() }
        let all = buffer
        buffer = []
        return all
    }

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

    func next(_ count: Int, timeout: Duration = .seconds(20), _ what: String = "events") async throws -> [Element] {
        var result: [Element] = []
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while result.count < count {
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { throw TimedOut(what: "\(count) \(what), got \(result.count)") }
            result.append(try await next(timeout: left, what))
        }
        return result
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

    let events = Events<Recorded>()
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
