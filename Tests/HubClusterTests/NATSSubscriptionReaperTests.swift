import Foundation
@testable import HubCluster
import Logging
import NetworkTestSupport
import Testing

/// Ended subscriptions are destroyed only once libnats's read loop is past them (a
/// round trip the server answered, the connection closed, or a long wait), so that
/// libnats 3.4 never locks a freed subscription (nats.c #637): against a real
/// nats-server, paused with SIGSTOP where a test needs a server that does not answer.
@Suite("NATS subscription reaper", .serialized)
struct NATSSubscriptionReaperTests {
    let logger = Logger(label: "test.nats.reaper")

    @Test func anEndedSubscriptionWaitsForARoundTripTheServerAnswers() async throws {
        let server = try await NATSServerProcess()
        let connection = try NATSConnection(options: .init(urls: [server.url], name: "reaped"), logger: logger)
        var subscription: NATSSubscription? = try connection.subscribe(to: "hub.v.x") { _ in }
        try connection.flush()
        server.pause()
        subscription = nil
        _ = subscription
        // The sweep's round trip gets no answer: the subscription waits, undestroyed.
        try await Task.sleep(for: .milliseconds(300))
        #expect(connection.reaper.waitingCount == 1)
        server.resume()
        try await waitUntil("the subscription to be destroyed after the answer") { connection.reaper.waitingCount == 0 }
    }

    @Test func anEndedSubscriptionIsDestroyedAfterTheLongestWaitWithoutAnAnswer() async throws {
        let server = try await NATSServerProcess()
        var options = NATSConnection.Options(urls: [server.url], name: "reaped")
        options.endedSubscriptionWait = .milliseconds(200)
        let connection = try NATSConnection(options: options, logger: logger)
        var subscription: NATSSubscription? = try connection.subscribe(to: "hub.v.x") { _ in }
        try connection.flush()
        server.pause()
        defer { server.resume() }
        subscription = nil
        _ = subscription
        #expect(connection.reaper.waitingCount == 1)
        // The first sweep's round trip times out after 2 s; then the subscription is overdue.
        try await waitUntil("the overdue subscription to be destroyed") { connection.reaper.waitingCount == 0 }
    }

    @Test func closingTheConnectionDestroysWhatWaitsAndWhatEndsAfter() async throws {
        let server = try await NATSServerProcess()
        let connection = try NATSConnection(options: .init(urls: [server.url], name: "reaped"), logger: logger)
        var first: NATSSubscription? = try connection.subscribe(to: "hub.v.x") { _ in }
        let second = try connection.subscribe(to: "hub.v.y") { _ in }
        try connection.flush()
        server.pause()
        defer { server.resume() }
        first = nil
        _ = first
        try await Task.sleep(for: .milliseconds(100))
        #expect(connection.reaper.waitingCount == 1)
        // Closing does not wait for the unanswered round trip (libnats ends it).
        let started = ContinuousClock.now
        connection.close()
        #expect(ContinuousClock.now - started < .milliseconds(1_500))
        #expect(connection.reaper.waitingCount == 0)
        second.unsubscribe()
        _ = second
        #expect(connection.reaper.waitingCount == 0)
    }

    /// Subscriptions made and ended over and over while a publisher floods their subject:
    /// the library is handling a message of one of them at any moment.
    @Test func subscriptionsEndedWhileMessagesFlowNeverCrashTheProcess() async throws {
        let server = try await NATSServerProcess()
        let publisher = try NATSConnection(options: .init(urls: [server.url], name: "flood"), logger: logger)
        let connection = try NATSConnection(options: .init(urls: [server.url], name: "churn"), logger: logger)
        let received = Counter()
        let flooding = Task.detached {
            let payload = [UInt8](repeating: 55, count: 64)
            while !Task.isCancelled {
                for _ in 0..<20 { try? publisher.publish(to: "hub.v.flood", payload: payload) }
                try? await Task.sleep(for: .microseconds(100))
            }
        }
        defer { flooding.cancel() }
        for _ in 0..<200 {
            var subscriptions = try (0..<8).map { _ in try connection.subscribe(to: "hub.v.flood") { _ in received.add() } }
            // The server has them (and sends them the flood) once a round trip is answered.
            try connection.flush()
            try await Task.sleep(for: .microseconds(200))
            subscriptions.removeAll()
        }
        flooding.cancel()
        _ = await flooding.value
        #expect(received.value > 0)
        try connection.flush()
        try await waitUntil("every ended subscription to be destroyed") { connection.reaper.waitingCount == 0 }
    }
}

/// A count that libnats's delivery thread adds to.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
