import Foundation
import HubCluster
import Logging
import NetworkTestSupport
import Testing

/// `NATSConnection` against a real nats-server on a loopback port.
@Suite("NATS connection", .serialized)
struct NATSConnectionTests {
    let logger = Logger(label: "test.nats")

    @Test func publishesAndSubscribesWithHeadersInOrder() async throws {
        let server = try await NATSServerProcess()
        let received = EventQueue<NATSMessage>()
        let subscriber = try NATSConnection(options: .init(urls: [server.url], name: "sub"), logger: logger)
        let publisher = try NATSConnection(options: .init(urls: [server.url], name: "pub"), logger: logger)
        #expect(subscriber.isConnected)
        let subscription = try subscriber.subscribe(to: "hub.v.prices") { received.push($0) }
        try subscriber.flush()
        for index in 0..<100 {
            try publisher.publish(to: "hub.v.prices", payload: Array("\(index)".utf8), headers: ["Hub-Node": "a"])
        }
        let messages = try await received.next(100, timeout: .seconds(10), "100 messages")
        #expect(messages.map { String(decoding: $0.payload, as: UTF8.self) } == (0..<100).map { "\($0)" })
        #expect(messages.allSatisfy { $0.headers["Hub-Node"] == "a" && $0.subject == "hub.v.prices" })

        // After unsubscribing, nothing more arrives (a flush orders the check after the server's work).
        subscription.unsubscribe()
        try subscriber.flush()
        try publisher.publish(to: "hub.v.prices", payload: Array("late".utf8))
        try publisher.flush()
        try subscriber.flush()
        #expect(received.count == 0)
    }

    @Test func aConnectionDoesNotHearItself() async throws {
        let server = try await NATSServerProcess()
        let received = EventQueue<NATSMessage>()
        let connection = try NATSConnection(options: .init(urls: [server.url], name: "self"), logger: logger)
        let subscription = try connection.subscribe(to: "hub.>") { received.push($0) }
        try connection.publish(to: "hub.v.x", payload: [49])
        try connection.flush()
        #expect(received.count == 0)
        _ = subscription
    }

    @Test func reconnectsAfterTheServerRestartsAndKeepsItsSubscriptions() async throws {
        let server = try await NATSServerProcess()
        let events = EventQueue<String>()
        let received = EventQueue<NATSMessage>()
        let handlers = NATSConnection.Handlers(
            disconnected: { events.push("disconnected") }, reconnected: { events.push("reconnected") },
            closed: { events.push("closed") })
        let connection = try NATSConnection(options: .init(urls: [server.url], name: "node"), handlers: handlers, logger: logger)
        let subscription = try connection.subscribe(to: "hub.v.x") { received.push($0) }
        try connection.flush()

        server.stop()
        #expect(try await events.next(timeout: .seconds(10), "disconnected") == "disconnected")
        #expect(!connection.isConnected)
        try await server.start()
        #expect(try await events.next(timeout: .seconds(10), "reconnected") == "reconnected")
        #expect(connection.isConnected)

        let publisher = try NATSConnection(options: .init(urls: [server.url], name: "pub"), logger: logger)
        try publisher.publish(to: "hub.v.x", payload: Array("after".utf8))
        let message = try await received.next(timeout: .seconds(10), "a message after the restart")
        #expect(String(decoding: message.payload, as: UTF8.self) == "after")

        // Closing may report a disconnection first; then the connection is closed.
        connection.close()
        var last = ""
        while last != "closed" { last = try await events.next(timeout: .seconds(10), "closed") }
        #expect(!connection.isConnected)
        _ = subscription
    }

    @Test func connectsLaterWhenNoServerAnswersYet() async throws {
        let port = try NATSServerProcess.freePort()
        let events = EventQueue<String>()
        let connection = try NATSConnection(
            options: .init(urls: ["nats://127.0.0.1:\(port)"], name: "early"),
            handlers: .init(connected: { events.push("connected") }), logger: logger)
        #expect(!connection.isConnected)
        let server = try await NATSServerProcess(port: port)
        #expect(try await events.next(timeout: .seconds(10), "connected") == "connected")
        #expect(connection.isConnected)
        _ = server
    }

    @Test func aBadURLIsRefusedWithItsCode() {
        #expect {
            _ = try NATSConnection(options: .init(urls: ["nats://127.0.0.1:notaport"], name: "x"), logger: logger)
        } throws: { error in
            (error as? NATSError)?.code == .invalidURL || (error as? NATSError)?.code == .connectFailed
        }
        #expect(throws: NATSError.self) {
            _ = try NATSConnection(options: .init(urls: [], name: "x"), logger: logger)
        }
    }
}
