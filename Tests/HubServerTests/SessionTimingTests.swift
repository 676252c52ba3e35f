import HubRegistry
import HubValue
import HubTesting
import HubWire
import HubServer
import Logging
import Testing

/// A ``SessionConnection`` that records what the session writes and does.
final class RecordingConnection: SessionConnection {
    var messages: [Value] = []
    var closes: [(code: UInt16, discardingQueued: Bool)] = []
    var aborts = 0
    var queuedBytes = 0
    /// Bytes each message adds to ``queuedBytes`` (to play a client that does not read).
    var bytesPerMessage = 0

    func sendMessage(_ build: (inout [UInt8]) -> Void) -> Bool {
        guard closes.isEmpty else { return false }
        var buffer: [UInt8] = []
        build(&buffer)
        messages.append((try? Value.parse(buffer)) ?? "<unparsable>")
        queuedBytes += bytesPerMessage
        return true
    }

    func sendBatched(key: UInt64, closing: [UInt8], _ append: (inout [UInt8], Bool) -> Void) -> Bool {
        sendMessage { buffer in
            append(&buffer, true)
            buffer.append(contentsOf: closing)
        }
    }

    func close(code: HubCloseCode, reason: String, discardingQueued: Bool) {
        closes.append((code.rawValue, discardingQueued))
    }

    func abort() { aborts += 1 }
}

/// The session's timers (authentication, close deadline) and its cleanup, in virtual time.
@Suite("HubServer session timers")
struct SessionTimingTests {
    let scheduler = TestScheduler()
    let hub: Hub
    let connection = RecordingConnection()

    init() {
        hub = Hub(scheduler: scheduler)
    }

    func makeSession(_ configuration: SessionConfiguration, authorization: String? = nil) -> Session {
        Session(
            id: "s1", hub: hub, connection: connection, configuration: configuration,
            authorization: authorization, encodingCache: ValueEncodingCache(), logger: Logger(label: "test"))
    }

    func receive(_ session: Session, _ text: String) {
        var text = text
        text.withUTF8 { session.receive(text: UnsafeRawBufferPointer($0)) }
    }

    @Test func theAuthenticationTimerIsCancelledWhenTheConnectionCloses() {
        let session = makeSession(SessionConfiguration(tokens: ["t"]))
        session.start()
        #expect(scheduler.pendingActionCount == 1)
        session.connectionClosed()
        #expect(scheduler.pendingActionCount == 0)
        scheduler.advance(by: .seconds(60))
        #expect(connection.messages.count == 1)
        #expect(connection.closes.isEmpty)
    }

    @Test func theAuthenticationTimerIsCancelledByAValidHello() {
        let session = makeSession(SessionConfiguration(tokens: ["t"]))
        session.start()
        receive(session, #"{"op":"hello","token":"t"}"#)
        #expect(scheduler.pendingActionCount == 0)
        scheduler.advance(by: .seconds(60))
        #expect(connection.closes.isEmpty)
    }

    @Test func aBearerTokenOnTheUpgradeArmsNoAuthenticationTimer() {
        let session = makeSession(SessionConfiguration(tokens: ["t"]), authorization: "Bearer t")
        session.start()
        #expect(scheduler.pendingActionCount == 0)
        scheduler.advance(by: .seconds(60))
        #expect(connection.closes.isEmpty)
        #expect(connection.messages.count == 1, "only the welcome")
    }

    @Test func noHelloInTimeIsUnauthorizedThenDroppedAfterTheCloseTimeout() {
        let session = makeSession(SessionConfiguration(tokens: ["t"], authenticationTimeout: .seconds(5)))
        session.start()
        scheduler.advance(by: .milliseconds(4999))
        #expect(connection.closes.isEmpty)
        scheduler.advance(by: .milliseconds(1))
        #expect(connection.messages.last?["code"] == "unauthorized")
        #expect(connection.closes.map(\.code) == [4401])
        #expect(connection.closes.first?.discardingQueued == false)
        scheduler.advance(by: .milliseconds(9999))
        #expect(connection.aborts == 0)
        scheduler.advance(by: .milliseconds(1))
        #expect(connection.aborts == 1)
        session.connectionClosed()
        scheduler.advance(by: .seconds(60))
        #expect(connection.aborts == 1)
    }

    @Test func aSlowConsumerIsClosedCancelledUpstreamAndDroppedAfterTenSeconds() throws {
        let session = makeSession(SessionConfiguration(maxQueuedBytes: 1000))
        connection.bytesPerMessage = 300
        session.start()
        receive(session, #"{"op":"subscribe","id":1,"to":"s","demand":"unlimited"}"#)
        receive(session, #"{"op":"subscribe","id":2,"pipeline":"timer(10ms)","demand":"unlimited"}"#)
        #expect(scheduler.pendingActionCount == 1)
        let subject = try hub.subject(named: "s")
        #expect(subject.subscriberCount == 1)
        hub.publish(1, to: subject)
        hub.publish(2, to: subject)
        #expect(connection.closes.map(\.code) == [4008])
        #expect(connection.closes.first?.discardingQueued == true)
        #expect(session.isClosed)
        #expect(session.subscriptionCount == 0)
        #expect(subject.subscriberCount == 0)
        // Only the close deadline is left: the timer pipeline was cancelled.
        #expect(scheduler.pendingActionCount == 1)
        let written = connection.messages.count
        // Messages that arrive while the connection is closing are ignored.
        receive(session, #"{"op":"send","to":"late","value":1,"ack":1}"#)
        receive(session, #"{"op":"list","ack":2}"#)
        #expect(hub.entry(named: "late") == nil)
        #expect(connection.messages.count == written)
        scheduler.advance(by: .milliseconds(9999))
        #expect(connection.aborts == 0)
        scheduler.advance(by: .milliseconds(1))
        #expect(connection.aborts == 1)
        #expect(scheduler.pendingActionCount == 0)
    }

    @Test func aConnectionThatClosesInTimeIsNotAborted() {
        let session = makeSession(SessionConfiguration(maxQueuedBytes: 100))
        connection.bytesPerMessage = 300
        session.start()
        #expect(connection.closes.map(\.code) == [4008])
        session.connectionClosed()
        #expect(scheduler.pendingActionCount == 0)
        scheduler.advance(by: .seconds(60))
        #expect(connection.aborts == 0)
    }

    @Test func aClosedConnectionCancelsTimersAndColdPipelines() throws {
        let session = makeSession(SessionConfiguration())
        session.start()
        receive(session, #"{"op":"subscribe","id":1,"pipeline":"timer(10ms)","demand":"unlimited"}"#)
        receive(session, #"{"op":"subscribe","id":2,"pipeline":"sequence([1, 2, 3])","demand":1}"#)
        scheduler.advance(by: .milliseconds(35))
        let ticks = connection.messages.filter { $0["id"] == 1 && $0["op"] == "next" }.count
        #expect(ticks == 3)
        #expect(connection.messages.filter { $0["id"] == 2 && $0["op"] == "next" }.count == 1)
        session.connectionClosed()
        #expect(session.subscriptionCount == 0)
        #expect(scheduler.pendingActionCount == 0)
        scheduler.advance(by: .seconds(1))
        #expect(connection.messages.filter { $0["id"] == 1 && $0["op"] == "next" }.count == ticks)
        // A request after the close produces nothing.
        receive(session, #"{"op":"request","id":2,"n":5}"#)
        #expect(connection.messages.filter { $0["id"] == 2 && $0["op"] == "next" }.count == 1)
    }
}
