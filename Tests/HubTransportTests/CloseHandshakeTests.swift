@testable import HubTransport
import Testing

/// Every transition of the close handshake state machine, without a socket.
@Suite("CloseHandshake")
struct CloseHandshakeTests {
    private static let slow = WebSocketCloseCode(4008)

    private func opened() -> CloseHandshake {
        var handshake = CloseHandshake()
        #expect(handshake.established() == .open(closePending: false))
        return handshake
    }

    @Test func aNewConnectionIsConnectingAndAcceptsMessages() {
        let handshake = CloseHandshake()
        #expect(handshake.state == .connecting)
        #expect(handshake.acceptsOutbound)
        #expect(!handshake.isEstablished)
        #expect(handshake.code == nil)
    }

    @Test func closeWhileOpenWritesTheQueueThenSendsTheCloseFrame() {
        var handshake = opened()
        #expect(handshake.state == .open)
        #expect(handshake.writable(queueIsEmpty: false) == .write)
        #expect(handshake.close(code: .normal, reason: "bye", discardingQueued: false) == .flush(discardingQueued: false))
        #expect(handshake.state == .closing)
        #expect(!handshake.acceptsOutbound)
        #expect(handshake.isEstablished)
        #expect(handshake.writable(queueIsEmpty: false) == .write)
        #expect(handshake.writable(queueIsEmpty: true) == .sendClose(.normal, "bye"))
        #expect(handshake.code == .normal)
        #expect(handshake.reason == "bye")
        #expect(handshake.closed() == .closed)
        #expect(handshake.state == .closed)
        #expect(handshake.closed() == .alreadyEnded)
        #expect(handshake.destroyed(role: .server) == .alreadyEnded)
    }

    @Test func aDiscardingCloseSendsTheCloseFrameAtTheNextWrite() {
        var handshake = opened()
        #expect(handshake.close(code: Self.slow, reason: "slow", discardingQueued: true) == .flush(discardingQueued: true))
        #expect(handshake.writable(queueIsEmpty: false) == .sendClose(Self.slow, "slow"))
    }

    @Test func aDiscardingCloseEscalatesAPendingOneAndLaterClosesAreIgnored() {
        var handshake = opened()
        #expect(handshake.close(code: .normal, reason: "after the queue", discardingQueued: false)
            == .flush(discardingQueued: false))
        #expect(handshake.close(code: .goingAway, reason: "again", discardingQueued: false) == CloseHandshake.CloseAction.none)
        #expect(handshake.close(code: Self.slow, reason: "slow", discardingQueued: true) == .flush(discardingQueued: true))
        #expect(handshake.pending == .init(code: Self.slow, reason: "slow", discardsQueued: true))
        #expect(handshake.close(code: .goingAway, reason: "", discardingQueued: true) == CloseHandshake.CloseAction.none)
        #expect(handshake.writable(queueIsEmpty: false) == .sendClose(Self.slow, "slow"))
    }

    /// The loop's end-of-pass flush writes only when a writable callback would: never past
    /// a discarding close or an abort, never with an empty queue.
    @Test func writesOutsideAWritableCallbackOnlyWhenOneWouldWrite() {
        var open = opened()
        #expect(open.writesQueued(queueIsEmpty: false))
        #expect(!open.writesQueued(queueIsEmpty: true))
        #expect(open.writable(queueIsEmpty: false) == .write)

        var closing = opened()
        _ = closing.close(code: .normal, reason: "", discardingQueued: false)
        #expect(closing.writesQueued(queueIsEmpty: false))
        #expect(closing.writable(queueIsEmpty: false) == .write)
        #expect(!closing.writesQueued(queueIsEmpty: true))

        var discarding = opened()
        _ = discarding.close(code: Self.slow, reason: "slow", discardingQueued: true)
        #expect(!discarding.writesQueued(queueIsEmpty: false))
        #expect(discarding.writable(queueIsEmpty: false) == .sendClose(Self.slow, "slow"))

        var aborting = opened()
        #expect(aborting.abort() == .discardQueueAndKill)
        #expect(!aborting.writesQueued(queueIsEmpty: false))
        #expect(aborting.writable(queueIsEmpty: false) == .abort)
    }

    @Test func closeWhileConnectingWaitsForTheHandshake() {
        var handshake = CloseHandshake()
        #expect(handshake.close(code: .normal, reason: "", discardingQueued: false) == .flush(discardingQueued: false))
        #expect(handshake.state == .connecting)
        #expect(!handshake.acceptsOutbound)
        #expect(handshake.established() == .open(closePending: true))
        #expect(handshake.state == .closing)
        #expect(handshake.writable(queueIsEmpty: true) == .sendClose(.normal, ""))
    }

    @Test func closeAfterTheEndDoesNothing() {
        var handshake = opened()
        #expect(handshake.closed() == .closed)
        #expect(handshake.close(code: .normal, reason: "", discardingQueued: true) == CloseHandshake.CloseAction.none)
        #expect(handshake.abort() == CloseHandshake.AbortAction.none)
    }

    @Test func abortWhileOpenKillsAtOnceAndNeverWrites() {
        var handshake = opened()
        #expect(handshake.abort() == .discardQueueAndKill)
        #expect(handshake.state == .closing)
        #expect(!handshake.acceptsOutbound)
        #expect(handshake.writable(queueIsEmpty: true) == .abort)
        #expect(handshake.closed() == .closed)
        #expect(handshake.code == nil)
    }

    @Test func abortWhileConnectingKillsWhenTheHandshakeCompletes() {
        var handshake = CloseHandshake()
        #expect(handshake.abort() == .discardQueue)
        #expect(handshake.established() == .kill)
        #expect(handshake.state == .closing)
    }

    @Test func abortKeepsAPendingCloseButStillKills() {
        var handshake = opened()
        _ = handshake.close(code: .normal, reason: "x", discardingQueued: false)
        #expect(handshake.abort() == .discardQueueAndKill)
        #expect(handshake.pending?.code == .normal)
        #expect(handshake.writable(queueIsEmpty: true) == .abort)
    }

    @Test func thePeersCloseCodeIsKeptAndNotOverwrittenByALaterOne() {
        var handshake = opened()
        handshake.peerClosed(code: .goingAway, reason: "leaving")
        #expect(handshake.state == .closing)
        #expect(!handshake.acceptsOutbound)
        handshake.peerClosed(code: .normal, reason: "again")
        #expect(handshake.code == .goingAway)
        #expect(handshake.reason == "leaving")
        #expect(handshake.closed() == .closed)
    }

    @Test func aPeerCloseWithoutACodeLeavesNone() {
        var handshake = opened()
        handshake.peerClosed(code: nil, reason: "")
        #expect(handshake.state == .closing)
        #expect(handshake.code == nil)
    }

    @Test func closingAtOnceRecordsTheCode() {
        var handshake = opened()
        #expect(handshake.closeNow(code: .messageTooBig, reason: "message too big") == .sendClose(.messageTooBig, "message too big"))
        #expect(handshake.state == .closing)
        #expect(handshake.code == .messageTooBig)
    }

    @Test func aClientDestroyedWhileConnectingFailedToConnect() {
        var client = CloseHandshake()
        #expect(client.destroyed(role: .client) == .failedToConnect)
        #expect(client.state == .closed)
        #expect(client.failedToConnect() == .alreadyEnded)
        var server = CloseHandshake()
        #expect(server.destroyed(role: .server) == .endedUnopened)
    }

    @Test func aFailedConnectionEndsOnce() {
        var handshake = CloseHandshake()
        #expect(handshake.failedToConnect() == .failedToConnect)
        #expect(handshake.closed() == .alreadyEnded)
        #expect(handshake.destroyed(role: .client) == .alreadyEnded)
    }

    @Test func anOpenConnectionDestroyedWithoutCloseEndsClosed() {
        var handshake = opened()
        #expect(handshake.destroyed(role: .client) == .closed)
        #expect(handshake.code == nil)
    }
}
