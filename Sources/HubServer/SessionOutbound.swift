import HubEngine
import HubRegistry
import HubValue
import HubWire
import Logging

/// The way out of one session: every server message it writes, the `next` of each
/// value a remote subscriber delivers (its JSON encoded once for all subscribers
/// through the loop's ``ValueEncodingCache``), the bound on what a client may leave
/// unread, and the close of the connection.
///
/// A session and its remote subscribers write through it; it reaches the network
/// only through ``SessionConnection``. Confined to the hub's event loop.
final class SessionOutbound {
    private let connection: any SessionConnection
    private let subscriptions: SessionSubscriptions
    private let encodingCache: ValueEncodingCache
    private let scheduler: any Scheduler
    private let maxQueuedBytes: Int
    private let closeTimeout: Duration
    /// The service loop's counters (slow consumers, pipeline failures).
    let counters: ServiceCounters
    /// The session's logger (a `hello` adds the client's name to its metadata).
    var logger: Logger
    /// Whether the session has ended (connection closed, slow consumer, refusal, shutdown).
    // Confined to the loop, and never re-entered while an access is open.
    @exclusivity(unchecked) private(set) var isClosed = false
    /// Drops a connection this side closed once its close frame has had `closeTimeout`.
    private var closeTimer: (any Cancellable)?
    /// Whether the connection frames values itself (``SessionConnection/framesValues``).
    private let framesValues: Bool

    init(
        connection: any SessionConnection, subscriptions: SessionSubscriptions, encodingCache: ValueEncodingCache,
        scheduler: any Scheduler, maxQueuedBytes: Int, closeTimeout: Duration, logger: Logger,
        counters: ServiceCounters
    ) {
        self.counters = counters
        self.connection = connection
        self.subscriptions = subscriptions
        self.encodingCache = encodingCache
        self.scheduler = scheduler
        self.maxQueuedBytes = maxQueuedBytes
        self.closeTimeout = closeTimeout
        self.logger = logger
        framesValues = connection.framesValues
    }

    // MARK: Messages

    /// Writes `message` (nothing once closed).
    func send(_ message: ServerMessage) {
        guard !isClosed else { return }
        connection.sendMessage { buffer in message.encode(into: &buffer) }
        checkQueue()
    }

    /// Writes an `error`, for subscription `id` or a request's `ack` when given.
    func sendError(_ error: HubError, id: UInt64?, ack: Int64?) {
        send(.error(error, id: id, ack: ack))
    }

    /// Writes one value of a subscription: `next` around the value's cached JSON, or
    /// one more element of the subscription's open batch `next`.
    func sendNext(_ value: Value, envelope: NextEnvelope, batch: Bool) {
        guard !isClosed else { return }
        if framesValues {
            connection.sendValue(encodingCache.encoded(value), offset: nil, subscription: envelope.id)
        } else if batch {
            let encodingCache = self.encodingCache
            connection.sendBatched(key: envelope.id, closing: NextEnvelope.batchTail) { buffer, opensMessage in
                if opensMessage {
                    envelope.appendBatchHead(to: &buffer)
                } else {
                    buffer.append(NextEnvelope.batchSeparator)
                }
                encodingCache.append(value, to: &buffer)
            }
        } else {
            // Straight into the connection's queue: head, the value encoded once, tail.
            let body = encodingCache.encoded(value)
            envelope.head.withUnsafeBytes { head in
                _ = connection.sendMessage(prefix: head, body: body, suffix: SessionOutbound.nextTail)
            }
        }
        checkQueue()
    }

    /// Writes one value of a subject with history: `next` with its offset, or one more
    /// element of the subscription's open batch `next` (whose head carries the offset of
    /// its first value).
    func sendNext(_ value: Value, offset: UInt64, envelope: NextEnvelope, batch: Bool) {
        guard !isClosed else { return }
        let encodingCache = self.encodingCache
        if framesValues {
            connection.sendValue(encodingCache.encoded(value), offset: offset, subscription: envelope.id)
        } else if batch {
            connection.sendBatched(key: envelope.id, closing: NextEnvelope.batchTail) { buffer, opensMessage in
                if opensMessage {
                    NextEnvelope.appendBatchHead(id: envelope.id, offset: offset, to: &buffer)
                } else {
                    buffer.append(NextEnvelope.batchSeparator)
                }
                encodingCache.append(value, to: &buffer)
            }
        } else {
            connection.sendMessage { buffer in
                NextEnvelope.appendHead(id: envelope.id, offset: offset, to: &buffer)
                encodingCache.append(value, to: &buffer)
                buffer.append(contentsOf: NextEnvelope.tail)
            }
        }
        checkQueue()
    }

    // MARK: Pacing replays

    /// Who waits for the connection's queue to drain (woken by the connection's handler).
    let room = OutboundRoom()

    /// Bytes queued for the connection now (see ``SessionConnection/queuedBytes``).
    var queuedBytes: Int { connection.queuedBytes }

    /// The queued bytes under which a replay may read its next page: a quarter of the
    /// slow-consumer bound, at most 1 MiB.
    var replayWatermark: Int { Swift.min(maxQueuedBytes / 4, 1 << 20) }

    /// A pipeline subscription ended with `failed`: counted, published on `$sys.events` and
    /// logged with the pipeline's name and the sender of the value that failed it
    /// (`unknown` when no client's value caused it: a timer, a delay).
    func pipelineFailed(_ pipeline: String, subscription id: UInt64, error: HubError, sender: String?) {
        counters.pipelineFailures += 1
        counters.emit("pipeline_failure", [
            "session": sessionField, "pipeline": .string(pipeline), "subscription": .int(Int64(id)),
            "sender": sender.map(Value.string) ?? .null, "error": .string(error.message),
        ])
        guard mayLogProblem() else { return }
        // Not "pipeline failed": the hub logs that once per named pipeline; this is one
        // subscriber's end (and the only line of an ad-hoc pipeline's failure).
        logger.notice(
            "pipeline subscription failed",
            metadata: [
                "pipeline": "\(pipeline)", "subscription": "\(id)", "sender": "\(sender ?? "unknown")",
                "error": "\(error.message)",
            ])
    }

    /// ``NextEnvelope/tail`` where it costs no reference counting to read.
    private static let nextTailString: StaticString = "}"
    static var nextTail: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: nextTailString.utf8Start, count: nextTailString.utf8CodeUnitCount)
    }

    /// How many of one connection's protocol errors and pipeline failures are logged: a
    /// client that sends nothing but bad messages (or subscribes to failing pipelines
    /// over and over) must not flood the log. The rest are counted (metrics,
    /// `$sys.events`) and their number logged when the connection closes.
    static let loggedProblemLimit = 20
    /// The connection's protocol errors and pipeline failures so far.
    private(set) var problems = 0

    /// Counts one protocol error or pipeline failure; whether to log it (the first
    /// ``loggedProblemLimit``; the next one logs that the rest are not).
    func mayLogProblem() -> Bool {
        problems += 1
        if problems == SessionOutbound.loggedProblemLimit + 1 {
            logger.notice(
                "further protocol errors and pipeline failures of this connection are not logged",
                metadata: ["limit": "\(SessionOutbound.loggedProblemLimit)"])
        }
        return problems <= SessionOutbound.loggedProblemLimit
    }

    /// The session's id (from the logger's metadata), for events.
    private var sessionField: Value {
        if case .string(let id)? = logger[metadataKey: "session"] { return .string(id) }
        return .null
    }

    // MARK: Ending

    /// Ends the session from this side: every subscription is cancelled upstream and
    /// the connection closed with `code`. If the close frame has not gone out within
    /// `closeTimeout`, the connection is dropped: a client that stopped reading cannot
    /// hold it (and what lws buffered for it) forever, and one that resumes in time
    /// still gets the close frame (PROTOCOL.md §5.8).
    func end(closing code: HubCloseCode, reason: String, discardingQueued: Bool) {
        guard !isClosed else { return }
        isClosed = true
        subscriptions.cancelAll()
        connection.close(code: code, reason: reason, discardingQueued: discardingQueued)
        let deadline = scheduler.now.advanced(by: closeTimeout)
        closeTimer = scheduler.schedule(after: deadline) { [weak self] in
            guard let self, self.closeTimer != nil else { return }
            self.closeTimer = nil
            self.logger.info("dropping a connection that did not take its close frame")
            self.connection.abort()
        }
    }

    /// Drops the connection at once, without a close handshake (a connection displaced
    /// from the pool of those waiting to authenticate: its slot is needed now).
    func drop() {
        guard !isClosed else { return }
        isClosed = true
        subscriptions.cancelAll()
        connection.abort()
    }

    /// The connection closed (whichever side began): subscriptions are cancelled, the
    /// close deadline forgotten.
    func connectionClosed() {
        closeTimer.take()?.cancel()
        guard !isClosed else { return }
        isClosed = true
        subscriptions.cancelAll()
    }

    /// Closes a connection whose client stopped reading (PROTOCOL.md §5.8).
    private func checkQueue() {
        let queued = connection.queuedBytes
        guard queued > maxQueuedBytes, !isClosed else { return }
        counters.slowConsumerCloses += 1
        counters.emit("slow_consumer", ["session": sessionField, "queued": .int(Int64(queued))])
        logger.warning("closing slow consumer", metadata: ["queued": "\(queued)", "limit": "\(maxQueuedBytes)"])
        end(closing: .slowConsumer, reason: "slow consumer", discardingQueued: true)
    }
}

extension SessionOutbound: ReplayPacer {
    /// A replay reads its next page while the connection's queue is under
    /// ``replayWatermark``, else once it has drained; nothing once the session is closed.
    func whenReady(_ resume: @escaping () -> Void) {
        guard !isClosed else { return }
        if connection.queuedBytes < replayWatermark {
            resume()
        } else {
            room.wait(resume)
        }
    }
}
