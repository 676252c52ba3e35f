import CNATS
import Foundation
import Logging

/// A connection to NATS (libnats) over one or more server URLs, which reconnects by
/// itself and tells its ``Handlers`` when it loses, regains or ends its connection.
///
/// Thread-safe. Every handler and every subscription's message handler runs on a
/// libnats thread, never on the hub's event loop: a user hands what it receives to its
/// loop (``ClusterNode`` does, through the loop's work queue). Messages of all the
/// connection's subscriptions are delivered by one library thread, in the order the
/// server sent them (libnats's global delivery pool), so that a value and a control
/// message one node published in that order reach another node in that order. (That
/// holds while the pool has one thread, libnats's default; an application that raises
/// it with `nats_SetMessageDeliveryPoolSize` keeps the order per subject only.)
///
/// While disconnected, publications wait in libnats's reconnect buffer (bounded by
/// ``Options/reconnectBufferBytes``; beyond it ``publish(to:payload:headers:)``
/// throws) and subscriptions are made again on reconnecting.
public final class NATSConnection: @unchecked Sendable {
    /// What the connection does with its servers.
    public struct Options: Sendable {
        /// The servers, `nats://HOST:PORT`; the connection moves to another on failure.
        public var urls: [String]
        /// The connection's name, as the server shows it (the node's name).
        public var name: String
        /// How long to wait between rounds of reconnect attempts.
        public var reconnectWait: Duration = .milliseconds(250)
        /// How long one connect attempt may take.
        public var connectTimeout: Duration = .seconds(2)
        /// How many bytes of publications may wait for a reconnect (then publishing fails).
        public var reconnectBufferBytes: Int = 8 << 20
        /// How many messages a subscription may hold undelivered before the library drops
        /// more (a slow consumer).
        public var pendingMessages: Int = 65_536
        /// How many bytes a subscription may hold undelivered before the library drops more.
        public var pendingBytes: Int = 64 << 20
        /// How often the client pings the server to find a dead connection.
        public var pingInterval: Duration = .seconds(2)
        /// Whether each publication is written to the socket by the publishing thread at
        /// once, rather than by libnats's flusher thread, which batches writes for about a
        /// millisecond: lower latency, a write system call per publication.
        public var sendImmediately = false
        /// How long an ended subscription waits for the server to answer a round trip
        /// before it is destroyed anyway (see ``NATSSubscriptionReaper``).
        public var endedSubscriptionWait: Duration = .seconds(10)

        /// Options for `urls`, named `name`.
        public init(urls: [String], name: String) {
            self.urls = urls
            self.name = name
        }
    }

    /// What the connection tells of its state; each runs on a libnats thread.
    public struct Handlers: Sendable {
        /// The first connection was made (also when it came after failed attempts).
        public var connected: @Sendable () -> Void
        /// The connection was lost; the library is reconnecting.
        public var disconnected: @Sendable () -> Void
        /// The connection is back (subscriptions made again).
        public var reconnected: @Sendable () -> Void
        /// The connection ended for good (``close()``).
        public var closed: @Sendable () -> Void

        /// Handlers; those not given do nothing.
        public init(
            connected: @Sendable @escaping () -> Void = {}, disconnected: @Sendable @escaping () -> Void = {},
            reconnected: @Sendable @escaping () -> Void = {}, closed: @Sendable @escaping () -> Void = {}
        ) {
            self.connected = connected
            self.disconnected = disconnected
            self.reconnected = reconnected
            self.closed = closed
        }
    }

    /// The options it was made with.
    public let options: Options
    /// The libnats connection (`natsConnection *`), for the JetStream parts of this module.
    let connection: OpaquePointer
    /// Destroys ended subscriptions once the library's read loop is past them.
    let reaper: NATSSubscriptionReaper
    private let lock = NSLock()
    private var isClosed = false
    private let logger: Logger

    /// Connects to `options.urls`. The call does not wait for a server: when none answers,
    /// the connection keeps trying in the background (``isConnected`` is false until one
    /// does, and `handlers.connected` runs then). Throws only when the library cannot set
    /// the connection up (an invalid URL among them: ``NATSError/Code/invalidURL``).
    public init(options: Options, handlers: Handlers = Handlers(), logger: Logger) throws(NATSError) {
        guard !options.urls.isEmpty else { throw NATSError(.invalidURL, "no NATS server URL given") }
        self.options = options
        self.logger = logger
        var opts: OpaquePointer?
        var status = natsOptions_Create(&opts)
        guard status == NATS_OK, let opts else { throw NATSError(.connectFailed, doing: "creating options", status: status) }
        defer { natsOptions_Destroy(opts) }

        func check(_ status: natsStatus, _ doing: String) throws(NATSError) {
            guard status == NATS_OK else { throw NATSError(.connectFailed, doing: doing, status: status) }
        }
        var urls = options.urls.map { strdup($0) }
        defer { urls.forEach { free($0) } }
        status = urls.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) {
                natsOptions_SetServers(opts, $0.baseAddress, Int32($0.count))
            }
        }
        guard status == NATS_OK else {
            throw NATSError(.invalidURL, doing: "NATS server URLs \(options.urls.joined(separator: ","))", status: status)
        }
        try check(natsOptions_SetName(opts, options.name), "setting the name")
        try check(natsOptions_SetNoRandomize(opts, false), "setting server order")
        try check(natsOptions_SetAllowReconnect(opts, true), "allowing reconnects")
        try check(natsOptions_SetMaxReconnect(opts, Int32.max), "setting reconnect attempts")
        try check(natsOptions_SetReconnectWait(opts, Self.milliseconds(options.reconnectWait)), "setting the reconnect wait")
        try check(natsOptions_SetTimeout(opts, Self.milliseconds(options.connectTimeout)), "setting the connect timeout")
        try check(natsOptions_SetReconnectBufSize(opts, Int32(clamping: options.reconnectBufferBytes)), "setting the reconnect buffer")
        try check(natsOptions_SetMaxPendingMsgs(opts, Int32(clamping: options.pendingMessages)), "setting pending limits")
        try check(natsOptions_SetPingInterval(opts, Self.milliseconds(options.pingInterval)), "setting the ping interval")
        try check(natsOptions_SetMaxPingsOut(opts, 2), "setting the pings out")
        try check(natsOptions_SetSendAsap(opts, options.sendImmediately), "setting send as soon as possible")
        // A node's own publications are not echoed back to it: it has delivered them locally.
        try check(natsOptions_SetNoEcho(opts, true), "setting no echo")
        // One delivery thread for every subscription: messages reach the handlers in the
        // order they came off the socket, across subjects.
        try check(natsOptions_UseGlobalMessageDelivery(opts, true), "setting global delivery")

        // The handlers live until the connection's closed callback (released there).
        let box = Unmanaged.passRetained(HandlersBox(handlers)).toOpaque()
        try check(natsOptions_SetDisconnectedCB(opts, { _, closure in
            guard let closure else { return }
            Unmanaged<HandlersBox>.fromOpaque(closure).takeUnretainedValue().handlers.disconnected()
        }, box), "setting the disconnected handler")
        try check(natsOptions_SetReconnectedCB(opts, { _, closure in
            guard let closure else { return }
            Unmanaged<HandlersBox>.fromOpaque(closure).takeUnretainedValue().handlers.reconnected()
        }, box), "setting the reconnected handler")
        try check(natsOptions_SetClosedCB(opts, { _, closure in
            guard let closure else { return }
            let handlers = Unmanaged<HandlersBox>.fromOpaque(closure).takeRetainedValue().handlers
            handlers.closed()
        }, box), "setting the closed handler")
        try check(natsOptions_SetRetryOnFailedConnect(opts, true, { _, closure in
            guard let closure else { return }
            Unmanaged<HandlersBox>.fromOpaque(closure).takeUnretainedValue().handlers.connected()
        }, box), "setting connect retries")

        var connection: OpaquePointer?
        status = natsConnection_Connect(&connection, opts)
        guard status == NATS_OK || status == NATS_NOT_YET_CONNECTED, let connection else {
            Unmanaged<HandlersBox>.fromOpaque(box).release()
            let code: NATSError.Code = status == NATS_INVALID_ARG ? .invalidURL : .connectFailed
            throw NATSError(code, doing: "connecting to \(options.urls.joined(separator: ","))", status: status)
        }
        self.connection = connection
        reaper = NATSSubscriptionReaper(connection: connection, maximumWait: options.endedSubscriptionWait)
        if status == NATS_OK { handlers.connected() }
    }

    deinit {
        close()
        natsConnection_Destroy(connection)
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Whether the connection is up now.
    public var isConnected: Bool { natsConnection_Status(connection) == NATS_CONN_STATUS_CONNECTED }

    /// The URL of the server it is connected to, if any.
    public var connectedURL: String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard natsConnection_GetConnectedUrl(connection, &buffer, buffer.count) == NATS_OK, buffer[0] != 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Publishes `payload` to `subject` with `headers`. While disconnected it waits in the
    /// reconnect buffer; throws when that is full or the connection is closed.
    public func publish(to subject: String, payload: [UInt8], headers: [String: String] = [:]) throws(NATSError) {
        var message: OpaquePointer?
        var status = payload.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                natsMsg_Create(&message, subject, nil, $0.baseAddress, Int32($0.count))
            }
        }
        guard status == NATS_OK, let message else { throw NATSError(.publishFailed, doing: "publishing to \(subject)", status: status) }
        defer { natsMsg_Destroy(message) }
        for (key, value) in headers {
            status = natsMsgHeader_Set(message, key, value)
            guard status == NATS_OK else { throw NATSError(.publishFailed, doing: "setting header \(key)", status: status) }
        }
        status = natsConnection_PublishMsg(connection, message)
        guard status == NATS_OK else { throw NATSError(.publishFailed, doing: "publishing to \(subject)", status: status) }
    }

    /// Subscribes to `subject` (NATS wildcards allowed); `handler` gets each message on
    /// the library's delivery thread until the subscription is ended.
    public func subscribe(
        to subject: String, _ handler: @Sendable @escaping (NATSMessage) -> Void
    ) throws(NATSError) -> NATSSubscription {
        let box = Unmanaged.passRetained(MessageHandlerBox(handler)).toOpaque()
        var subscription: OpaquePointer?
        let status = natsConnection_Subscribe(&subscription, connection, subject, { _, _, message, closure in
            guard let message else { return }
            defer { natsMsg_Destroy(message) }
            guard let closure else { return }
            let copy = NATSMessage(copying: message)
            Unmanaged<MessageHandlerBox>.fromOpaque(closure).takeUnretainedValue().handler(copy)
        }, box)
        guard status == NATS_OK, let subscription else {
            Unmanaged<MessageHandlerBox>.fromOpaque(box).release()
            throw NATSError(.subscribeFailed, doing: "subscribing to \(subject)", status: status)
        }
        // The handler's box goes once the last message has been handled.
        natsSubscription_SetOnCompleteCB(subscription, { closure in
            guard let closure else { return }
            Unmanaged<MessageHandlerBox>.fromOpaque(closure).release()
        }, box)
        natsSubscription_SetPendingLimits(
            subscription, Int32(clamping: options.pendingMessages), Int32(clamping: options.pendingBytes))
        return NATSSubscription(subscription, subject: subject, reaper: reaper)
    }

    /// Waits until the server has processed everything sent so far (subscriptions
    /// included), or `timeout`.
    public func flush(timeout: Duration = .seconds(2)) throws(NATSError) {
        let status = natsConnection_FlushTimeout(connection, Self.milliseconds(timeout))
        guard status == NATS_OK else { throw NATSError(.flushFailed, doing: "flushing", status: status) }
    }

    /// Closes the connection (no more reconnects); `handlers.closed` runs. Idempotent.
    public func close() {
        let first = lock.withLock {
            defer { isClosed = true }
            return !isClosed
        }
        guard first else { return }
        natsConnection_Close(connection)
        reaper.connectionClosed()
    }
}

/// The connection's handlers, behind a C callback's closure pointer.
private final class HandlersBox: Sendable {
    let handlers: NATSConnection.Handlers
    init(_ handlers: NATSConnection.Handlers) { self.handlers = handlers }
}

/// A subscription's handler, behind a C callback's closure pointer.
private final class MessageHandlerBox: Sendable {
    let handler: @Sendable (NATSMessage) -> Void
    init(_ handler: @Sendable @escaping (NATSMessage) -> Void) { self.handler = handler }
}
