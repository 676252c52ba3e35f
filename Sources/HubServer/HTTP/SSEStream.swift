import HubEngine
import HubTransport
import HubValue
import HubWire

/// The ``SessionConnection`` of a Server-Sent Events stream: the session's one
/// subscription, written as events.
///
/// Until the session answers the `subscribe`, nothing is sent: an `error` then is the
/// request's HTTP answer (``onRefusal``). `subscribed` starts the stream (`200`,
/// `text/event-stream`), with an `event: reset` carrying the epoch first when the resume
/// asked for could not be honoured (the protocol's `recovered: false`). Each value is an
/// event whose `data` is the value's JSON as encoded once for every subscriber
/// (``sendValue(_:offset:subscription:)``), with `id: OFFSET@EPOCH` for a subject with
/// history; `complete` and `error` end the stream with `event: complete` or
/// `event: error`. A stream whose reader stopped reading is ended by the session as a
/// slow consumer, with a last `event: error`, and its connection closed.
///
/// Confined to the hub's loop.
final class SSEStream: SessionConnection {
    private enum Phase {
        case waiting, streaming, ended
    }

    private let channel: any HTTPStreamChannel
    private var phase = Phase.waiting
    /// The epoch of the subject's history, from `subscribed`.
    private var epoch: String?
    /// Values still to send with `?demand=N`; `nil`: unlimited.
    private var remaining: Int64?
    /// Bytes of events written so far, and the events.
    private(set) var bytesWritten = 0
    private(set) var eventsWritten = 0
    /// Hears the error that refused the subscription before the stream began.
    var onRefusal: ((HubError) -> Void)?
    /// Hears that the stream has ended (from either side).
    var onEnd: (() -> Void)?

    /// Writes a comment while the stream is quiet (``keepAlive(every:on:)``).
    private var heartbeat: (any Cancellable)?

    init(channel: any HTTPStreamChannel, demand: Int64?) {
        self.channel = channel
        remaining = demand
    }

    /// Once the stream has begun, writes a comment line every `interval` (as WebSocket
    /// connections are pinged): proxies keep a quiet stream open, and a reader that
    /// vanished without closing is found by the write that fails, rather than holding
    /// its connection's place for ever.
    func keepAlive(every interval: Duration, on scheduler: any Scheduler) {
        heartbeat = scheduler.schedule(after: scheduler.now.advanced(by: interval), interval: interval) { [weak self] in
            guard let self, self.phase == .streaming else { return }
            self.write(SSEStream.ping)
        }
    }

    /// The heartbeat's comment.
    static let ping = Array(": ping\n\n".utf8)

    /// The headers of an event stream: never cached, never buffered by a proxy.
    static let headers: [HTTPResponse.Header] = [
        .init("cache-control", "no-store"), .init("x-accel-buffering", "no"), .init("x-content-type-options", "nosniff"),
    ]

    // MARK: SessionConnection

    var framesValues: Bool { true }

    func sendValue(_ body: UnsafeRawBufferPointer, offset: UInt64?, subscription: UInt64) -> Bool {
        guard phase == .streaming else { return false }
        let epoch = self.epoch
        var size = 0
        channel.append { event in
            let before = event.count
            defer { size = event.count - before }
            if let offset, let epoch {
                event.append(contentsOf: "id: ".utf8)
                SSESubscription.appendEventID(offset: offset, epoch: epoch, to: &event)
                event.append(UInt8(ascii: "\n"))
            }
            // The encoder escapes every control character: the JSON is one line.
            event.append(contentsOf: "data: ".utf8)
            event.append(contentsOf: body)
            event.append(contentsOf: "\n\n".utf8)
        }
        bytesWritten += size
        eventsWritten += 1
        if let remaining {
            self.remaining = remaining - 1
            if remaining <= 1 { end(closingConnection: false) }
        }
        return true
    }

    func sendMessage(_ build: (inout [UInt8]) -> Void) -> Bool {
        guard phase != .ended else { return false }
        var buffer: [UInt8] = []
        build(&buffer)
        guard case .object(let fields)? = try? Value.parse(buffer), case .string(let op)? = fields["op"] else { return true }
        switch op {
        case "subscribed":
            begin(fields)
        case "complete":
            finalEvent("complete", .object([:]))
        case "error":
            let error = HubError(
                fields["code"]?.stringValue.flatMap(HubError.Code.init(rawValue:)) ?? .internal,
                fields["message"]?.stringValue ?? "", data: fields["data"])
            if phase == .waiting {
                phase = .ended
                onRefusal?(error)
                return true
            }
            finalEvent("error", APIErrorStatus.body(of: error))
        default:
            // `welcome`; a `next` never comes (values are framed by ``sendValue``).
            break
        }
        return true
    }

    func sendBatched(key: UInt64, closing: [UInt8], _ append: (inout [UInt8], Bool) -> Void) -> Bool {
        // The subscription is not batched: nothing comes this way.
        false
    }

    var queuedBytes: Int { channel.queuedBytes }

    func close(code: HubCloseCode, reason: String, discardingQueued: Bool) {
        switch phase {
        case .waiting:
            phase = .ended
            onRefusal?(code == .tooManyConnections
                ? HubError(.limitExceeded, "the server is at its connection limit", data: ["limit": "maxConnections"])
                : HubError(.shuttingDown, "the stream's session ended: \(reason)"))
        case .streaming:
            if code == .slowConsumer {
                // What is queued stays queued (a chunk cannot be taken back); the connection
                // closes once it is out, or within seconds if the reader never reads it.
                write(SSEStream.event(
                    "error", APIErrorStatus.body(of: HubError(
                        .limitExceeded, "slow consumer: the stream was not read fast enough and is closed",
                        data: ["limit": "maxQueuedBytes"]))))
                end(closingConnection: true)
            } else {
                end(closingConnection: true)
            }
        case .ended:
            break
        }
    }

    func abort() {
        close(code: .goingAway, reason: "dropped", discardingQueued: true)
    }

    // MARK: Events

    /// The subscription is there: the stream begins.
    private func begin(_ subscribed: Value.Object) {
        guard phase == .waiting else { return }
        phase = .streaming
        epoch = subscribed["epoch"]?.stringValue
        channel.onClose = { [weak self] in self?.peerClosed() }
        channel.start(status: 200, contentType: "text/event-stream", headers: SSEStream.headers)
        if subscribed["recovered"] == .bool(false) {
            var reset: Value.Object = [:]
            if let epoch { reset["epoch"] = .string(epoch) }
            if let offset = subscribed["offset"] { reset["offset"] = offset }
            write(SSEStream.event("reset", .object(reset)))
        }
        if remaining == 0 { end(closingConnection: false) }
    }

    /// Writes the last event and ends the stream.
    private func finalEvent(_ name: String, _ data: Value) {
        guard phase == .streaming else { return }
        write(SSEStream.event(name, data))
        end(closingConnection: false)
    }

    private func end(closingConnection: Bool) {
        guard phase != .ended else { return }
        let started = phase == .streaming
        phase = .ended
        heartbeat.take()?.cancel()
        if started { channel.end(closingConnection: closingConnection) }
        onEnd?()
    }

    private func peerClosed() {
        guard phase != .ended else { return }
        phase = .ended
        heartbeat.take()?.cancel()
        onEnd?()
    }

    private func write(_ event: [UInt8]) {
        append { $0.append(contentsOf: event) }
    }

    /// Appends one event to the stream's body, counting it.
    private func append(_ event: (inout [UInt8]) -> Void) {
        channel.append { body in
            let before = body.count
            event(&body)
            bytesWritten += body.count - before
        }
        eventsWritten += 1
    }

    /// An event named `name` with `data` as its JSON.
    static func event(_ name: String, _ data: Value) -> [UInt8] {
        var event = Array("event: \(name)\ndata: ".utf8)
        data.writeJSON(into: &event)
        event.append(contentsOf: "\n\n".utf8)
        return event
    }
}
