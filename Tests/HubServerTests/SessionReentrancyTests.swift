import HubRegistry
import HubTesting
import HubServer
import Logging
import Testing

/// A session that closes itself in the middle of delivering (slow consumer) or
/// that receives a client's message from inside a delivery.
@Suite("HubServer session reentrancy")
struct SessionReentrancyTests {
    let scheduler = TestScheduler()
    let hub: Hub
    let connection = RecordingConnection()

    init() {
        hub = Hub(scheduler: scheduler)
    }

    func makeSession(_ configuration: SessionConfiguration) -> Session {
        Session(
            id: "s1", hub: hub, connection: connection, configuration: configuration,
            authorization: nil, encodingCache: ValueEncodingCache(), logger: Logger(label: "test"))
    }

    func receive(_ session: Session, _ text: String) {
        var text = text
        text.withUTF8 { session.receive(text: UnsafeRawBufferPointer($0)) }
    }

    @Test func crossingTheLimitWhileABufferDrainsStopsTheDrain() throws {
        let session = makeSession(SessionConfiguration(maxQueuedBytes: 10_000))
        session.start()
        receive(session, #"{"op":"subscribe","id":1,"to":"s","buffer":1000}"#)
        receive(session, #"{"op":"subscribe","id":2,"to":"s","buffer":1000}"#)
        let subject = try hub.subject(named: "s")
        for value in 0..<500 { hub.publish(.int(Int64(value)), to: subject) }
        connection.bytesPerMessage = 100
        receive(session, #"{"op":"request","id":1,"n":"unlimited"}"#)
        #expect(connection.closes.map(\.code) == [4008])
        #expect(subject.subscriberCount == 0)
        #expect(session.subscriptionCount == 0)
        let delivered = connection.messages.filter { $0["op"] == "next" }
        // Delivery stopped where the limit was crossed: 10,000 / 100 + 1 messages.
        #expect(delivered.count == 101)
        #expect(delivered.map { $0["value"] } == (0..<101).map { .int(Int64($0)) })
        #expect(delivered.allSatisfy { $0["id"] == 1 })
        // The other subscription's buffer is gone too: no demand brings anything back.
        receive(session, #"{"op":"request","id":2,"n":"unlimited"}"#)
        #expect(connection.messages.filter { $0["op"] == "next" }.count == 101)
    }

    @Test func crossingTheLimitInsideASynchronousColdPipelineStopsIt() {
        let session = makeSession(SessionConfiguration(maxQueuedBytes: 1000))
        session.start()
        connection.bytesPerMessage = 100
        let elements = (0..<100).map(String.init).joined(separator: ", ")
        receive(session, #"{"op":"subscribe","id":1,"pipeline":"sequence([\#(elements)])","demand":"unlimited"}"#)
        #expect(connection.closes.map(\.code) == [4008])
        #expect(session.subscriptionCount == 0)
        let delivered = connection.messages.filter { $0["op"] == "next" }
        #expect(delivered.count < 15)
        #expect(!connection.messages.contains { $0["op"] == "complete" })
    }

    @Test func aSubjectCompletingWhileTheSessionFansOutEndsEverySubscriptionOnce() throws {
        let session = makeSession(SessionConfiguration())
        session.start()
        for id in 1...3 {
            receive(session, #"{"op":"subscribe","id":\#(id),"to":"s","demand":"unlimited"}"#)
        }
        receive(session, #"{"op":"send","to":"s","value":"v","ack":1}"#)
        receive(session, #"{"op":"complete","to":"s","ack":2}"#)
        let ops = connection.messages.dropFirst(4).map { "\($0["op"]!.stringValue!)\($0["id"]?.intValue.map(String.init) ?? "")" }
        #expect(ops == ["ack", "next1", "next2", "next3", "ack", "complete1", "complete2", "complete3"])
        #expect(session.subscriptionCount == 0)
        // Ids are free again.
        receive(session, #"{"op":"subscribe","id":1,"to":"other"}"#)
        #expect(connection.messages.last == ["op": "subscribed", "id": 1, "kind": "subject"])
    }
}
