import HubRegistry
import HubServer
import HubTransport
import HubValue
import HubWire
import Testing

/// `overflow: block` (PROTOCOL.md §5.7): a publisher that outruns a subject's
/// subscribers is slowed down (the broker stops reading its connection) while they
/// drain, instead of their values being dropped or their connections closed.
@Suite("HubServer publisher back pressure")
struct PublisherBackPressureTests {
    static func configuration(publisherWait: Duration = .seconds(30), maxQueuedBytes: Int = 16 << 20) -> HubService.Configuration {
        var session = SessionConfiguration(maxQueuedBytes: maxQueuedBytes)
        session.publisherWait = publisherWait
        return serviceConfiguration(session: session)
    }

    static func declareJobs(_ hub: Hub) throws {
        try hub.declareSubject("jobs", bufferSize: 8, overflow: .block)
    }

    static func sends(_ range: ClosedRange<Int>, size: Int = 0) -> [String] {
        let padding = String(repeating: "p", count: size)
        return range.map { index in
            json(["op": "send", "to": "jobs", "value": size == 0 ? .int(Int64(index)) : ["n": .int(Int64(index)), "pad": .string(padding)], "ack": .int(Int64(index))])
        }
    }

    @Test func aPublisherThatOutrunsASlowSubscriberWaitsForItAndNothingIsLost() async throws {
        try await withServer(Self.configuration(), setUp: Self.declareJobs) { server in
            let subscriber = try await server.connect()
            try await subscriber.send(json(["op": "subscribe", "id": 1, "to": "jobs", "demand": 2]))
            #expect(try await subscriber.next()["op"] == "subscribed")
            let publisher = try await server.connect()
            try await publisher.send(Self.sends(1...200))
            #expect(try await subscriber.values(2, id: 1) == [1, 2])
            // The subscriber's buffer (8) is full: the publisher is no longer read.
            #expect(try await server.eventually { hub in
                guard case .subject(let subject) = hub.entry(named: "jobs") else { return false }
                return subject.congestion.isCongested
            })
            let published = try await server.withHub { hub -> Int in
                guard case .subject(let subject) = hub.entry(named: "jobs") else { return -1 }
                return subject.counters.published
            }
            #expect(published < 200, "published \(published)")
            // Asking for the rest lets the publisher go on: every value, in order, none dropped.
            try await subscriber.send(json(["op": "request", "id": 1, "n": 198]))
            let rest = try await subscriber.values(198, id: 1)
            #expect(rest == (3...200).map { Value.int(Int64($0)) })
            let acks = try await publisher.next(200).compactMap { $0["ack"]?.intValue.map(Int.init) }
            #expect(acks == Array(1...200))
            let dropped = try await server.withHub { hub -> Int in hub.metrics.dropped + hub.metrics.overflows }
            #expect(dropped == 0)
        }
    }

    @Test func aStuckSubscriberEndsWithOverflowOnceThePublisherHasWaitedItsMaximum() async throws {
        try await withServer(Self.configuration(publisherWait: .milliseconds(300)), setUp: Self.declareJobs) { server in
            let stuck = try await server.connect()
            try await stuck.send(json(["op": "subscribe", "id": 1, "to": "jobs", "demand": 0]))
            #expect(try await stuck.next()["op"] == "subscribed")
            let reader = try await server.connect()
            try await reader.send(json(["op": "subscribe", "id": 7, "to": "jobs", "demand": "unlimited"]))
            #expect(try await reader.next()["op"] == "subscribed")
            let publisher = try await server.connect()
            try await publisher.send(Self.sends(1...50))
            let end = try await stuck.next()
            #expect(end["op"] == "error" && end["id"] == 1 && end["code"] == "overflow", "\(end)")
            #expect(end["message"]?.stringValue?.contains("longer than its publishers may wait") == true, "\(end)")
            // The publisher goes on; the subscriber that kept up misses nothing.
            let acks = try await publisher.next(50).compactMap { $0["ack"]?.intValue.map(Int.init) }
            #expect(acks == Array(1...50))
            #expect(try await reader.values(50, id: 7) == (1...50).map { Value.int(Int64($0)) })
        }
    }

    /// A subscriber that gives unlimited demand but stops reading its socket: its values
    /// wait in its subscription's buffer (where they slow the publisher down), not in its
    /// connection's queue, which would close it as a slow consumer.
    @Test func aSubscriberThatStopsReadingSlowsThePublisherInsteadOfBeingClosed() async throws {
        let maxQueued = 256 << 10
        try await withServer(Self.configuration(maxQueuedBytes: maxQueued), setUp: Self.declareJobs) { server in
            let subscriber = try await server.connect()
            try await subscriber.send(json(["op": "subscribe", "id": 1, "to": "jobs", "demand": "unlimited"]))
            #expect(try await subscriber.next()["op"] == "subscribed")
            try await subscriber.withConnection { $0.pauseReading() }
            let publisher = try await server.connect()
            let count = 1500
            try await publisher.send(Self.sends(1...count, size: 16 << 10))  // 24 MiB in all
            #expect(try await server.eventually { hub in
                guard case .subject(let subject) = hub.entry(named: "jobs") else { return false }
                return subject.congestion.isCongested
            })
            let statistics = await server.service.statistics
            #expect(statistics.queuedBytes <= maxQueued, "\(statistics)")
            #expect(statistics.connections == 2)
            try await subscriber.withConnection { $0.resumeReading() }
            let values = try await subscriber.values(count, id: 1, timeout: .seconds(60))
            #expect(values.compactMap { $0["n"]?.intValue.map(Int.init) } == Array(1...count))
            let acks = try await publisher.next(count, timeout: .seconds(60)).compactMap { $0["ack"]?.intValue.map(Int.init) }
            #expect(acks == Array(1...count))
        }
    }

    @Test func aSubscriberCannotAskForBlock() async throws {
        try await withServer(Self.configuration(), setUp: Self.declareJobs) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "to": "prices", "overflow": "block"]))
            let answer = try await client.next()
            #expect(answer["op"] == "error" && answer["code"] == "bad_message", "\(answer)")
            #expect(answer["message"]?.stringValue?.contains("\"latest\"") == true, "\(answer)")
        }
    }
}
