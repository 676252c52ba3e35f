import HubValue
import HubWire

/// The ``SessionConnection`` of a session that serves one HTTP API request: each
/// message the session writes (its `welcome`, an `ack`, an `error`, a `catalog`) is
/// parsed back and handed to ``onMessage``, and a close to ``onClose``. These answers
/// are small and few: a request's values never come back this way.
///
/// Nothing is queued, so the session never finds it slow. Confined to the hub's loop.
final class APISessionConnection: SessionConnection {
    /// Hears each message the session writes, as JSON.
    var onMessage: ((Value) -> Void)?
    /// Hears the session close the connection, with the close code.
    var onClose: ((HubCloseCode) -> Void)?
    /// Whether the session has closed it.
    private(set) var isClosed = false
    /// Whether the session stopped reading: a subject it sent to is congested
    /// (`overflow: block`), or too many of its values wait for the store.
    private(set) var isPaused = false
    /// Runs (once) when the session reads on.
    var onResume: (() -> Void)?

    func sendMessage(_ build: (inout [UInt8]) -> Void) -> Bool {
        guard !isClosed else { return false }
        var buffer: [UInt8] = []
        build(&buffer)
        deliver(buffer)
        return true
    }

    func sendBatched(key: UInt64, closing: [UInt8], _ append: (inout [UInt8], Bool) -> Void) -> Bool {
        guard !isClosed else { return false }
        var buffer: [UInt8] = []
        append(&buffer, true)
        buffer.append(contentsOf: closing)
        deliver(buffer)
        return true
    }

    var queuedBytes: Int { 0 }

    func close(code: HubCloseCode, reason: String, discardingQueued: Bool) {
        guard !isClosed else { return }
        isClosed = true
        onClose?(code)
    }

    func abort() {
        close(code: .goingAway, reason: "dropped", discardingQueued: true)
    }

    func pauseReading() {
        isPaused = true
    }

    func resumeReading() {
        isPaused = false
        onResume.take()?()
    }

    /// Stops hearing the session (the request is answered).
    func detach() {
        isClosed = true
        onMessage = nil
        onClose = nil
        onResume = nil
    }

    private func deliver(_ message: [UInt8]) {
        // The session's own encoder wrote it: it parses.
        guard let onMessage, let value = try? Value.parse(message) else { return }
        onMessage(value)
    }
}
