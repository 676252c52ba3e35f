/// Where a connection is in its life, the close this side asked for, and the close code
/// it ends with: a state machine whose `mutating` transitions say what the connection
/// must do (write, send the close frame, kill the socket, tell the handler).
struct CloseHandshake {
    /// A close this side asked for and has not sent yet.
    struct PendingClose: Equatable {
        var code: WebSocketCloseCode
        var reason: String
        /// Whether queued messages are dropped instead of written first.
        var discardsQueued: Bool
    }

    /// What a close request leads to.
    enum CloseAction: Equatable {
        /// Nothing: the connection is closed, or a close is pending already.
        case none
        /// Drop the queued messages (when `discardingQueued`), then ask for a writable
        /// callback (the close frame goes out once the queue is empty).
        case flush(discardingQueued: Bool)
    }

    /// What an abort leads to.
    enum AbortAction: Equatable {
        /// Nothing: already closed.
        case none
        /// Drop the queue; the socket is killed once the handshake completes.
        case discardQueue
        /// Drop the queue and kill the socket now.
        case discardQueueAndKill
    }

    /// What the end of the opening handshake leads to.
    enum EstablishAction: Equatable {
        /// Kill the socket: the connection was aborted while connecting.
        case kill
        /// The connection is open; `closePending`: a close was asked for while connecting
        /// (ask for a writable callback to send it).
        case open(closePending: Bool)
    }

    /// What a writable callback is for.
    enum WritableAction: Equatable {
        /// Close the socket without a close frame (aborted).
        case abort
        /// Send the close frame with this code and reason, then close.
        case sendClose(WebSocketCloseCode, String)
        /// Write queued messages.
        case write
    }

    /// How the connection ended.
    enum Ending: Equatable {
        /// It had ended already: nothing more to do.
        case alreadyEnded
        /// It was open: tell the handler it closed with ``code`` and ``reason``.
        case closed
        /// It never opened: let it go silently.
        case endedUnopened
        /// A client connection never opened: report the failure.
        case failedToConnect
    }

    /// Where the connection is.
    private(set) var state = WebSocketConnection.State.connecting
    /// The close this side asked for, until it is sent.
    private(set) var pending: PendingClose?
    /// The close code sent or received first (`nil`: none yet, or the connection ended
    /// without a close frame).
    private(set) var code: WebSocketCloseCode?
    /// The close reason that came with ``code``.
    private(set) var reason = ""
    /// Whether ``abort(isEstablished:)`` was called.
    private(set) var isAborting = false
    private var hasEnded = false

    init() {}

    /// Whether messages may be queued: open or connecting, and no close asked for.
    var acceptsOutbound: Bool {
        pending == nil && (state == .open || state == .connecting)
    }

    /// Whether the socket is up (writable callbacks may be asked for, messages delivered).
    var isEstablished: Bool {
        state == .open || state == .closing
    }

    /// This side asks to close with `code` and `reason`.
    ///
    /// A second request does nothing, except that one discarding the queue escalates a
    /// pending close that was waiting for the queue to drain (its code and reason win).
    mutating func close(code: WebSocketCloseCode, reason: String, discardingQueued: Bool) -> CloseAction {
        if let pending {
            guard discardingQueued, !pending.discardsQueued, state != .closed else { return .none }
            self.pending = PendingClose(code: code, reason: reason, discardsQueued: true)
            return .flush(discardingQueued: true)
        }
        guard state == .open || state == .connecting else { return .none }
        pending = PendingClose(code: code, reason: reason, discardsQueued: discardingQueued)
        if state == .open { state = .closing }
        return .flush(discardingQueued: discardingQueued)
    }

    /// This side drops the connection without a close handshake.
    mutating func abort() -> AbortAction {
        guard state != .closed else { return .none }
        if pending == nil { pending = PendingClose(code: .normal, reason: "", discardsQueued: true) }
        isAborting = true
        guard isEstablished else { return .discardQueue }
        state = .closing
        return .discardQueueAndKill
    }

    /// The opening handshake finished.
    mutating func established() -> EstablishAction {
        state = .open
        if isAborting {
            state = .closing
            return .kill
        }
        if pending != nil { state = .closing }
        return .open(closePending: pending != nil)
    }

    /// Whether queued messages may be written now, outside a writable callback (no close
    /// or abort is due before them): what ``writable(queueIsEmpty:)`` would answer with
    /// `.write`, without its transition.
    func writesQueued(queueIsEmpty: Bool) -> Bool {
        guard !isAborting, !queueIsEmpty else { return false }
        guard let pending else { return true }
        return !pending.discardsQueued
    }

    /// The socket can take a write.
    mutating func writable(queueIsEmpty: Bool) -> WritableAction {
        guard !isAborting else { return .abort }
        guard let pending, pending.discardsQueued || queueIsEmpty else { return .write }
        return closeNow(code: pending.code, reason: pending.reason)
    }

    /// This side closes at once (for example with 1009 for a message too big).
    mutating func closeNow(code: WebSocketCloseCode, reason: String) -> WritableAction {
        self.code = code
        self.reason = reason
        state = .closing
        return .sendClose(code, reason)
    }

    /// The peer sent a close frame (with `code`, when it carried one).
    mutating func peerClosed(code: WebSocketCloseCode?, reason: String) {
        state = .closing
        guard self.code == nil, let code else { return }
        self.code = code
        self.reason = reason
    }

    /// lws reports the connection closed.
    mutating func closed() -> Ending {
        guard !hasEnded else { return .alreadyEnded }
        hasEnded = true
        let wasOpen = isEstablished
        state = .closed
        return wasOpen ? .closed : .endedUnopened
    }

    /// A client connection failed before opening.
    mutating func failedToConnect() -> Ending {
        guard !hasEnded else { return .alreadyEnded }
        hasEnded = true
        state = .closed
        return .failedToConnect
    }

    /// lws frees the connection: a client connection still connecting failed, any other
    /// one closed.
    mutating func destroyed(role: WebSocketConnection.Role) -> Ending {
        if state == .connecting, role == .client { return failedToConnect() }
        return closed()
    }
}
