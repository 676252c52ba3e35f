import HubEngine
import HubWire
import HubTransport
import Logging

/// The state of one ``HubClient``, confined to the client's event loop: the
/// connection and its life (connect, welcome, reconnect with backoff), the live
/// subscriptions by id, and the calls waiting for their ack.
final class ClientCore {
    /// Where the connection is.
    enum State {
        /// Not connected; the next call connects.
        case idle
        /// A connection attempt is under way (handshake or waiting for `welcome`).
        case connecting
        /// Connected and welcomed.
        case open(WebSocketConnection)
        /// Lost; the next attempt is scheduled.
        case waitingToReconnect
        /// Closed by ``HubClient/close()``: everything fails with `closed`.
        case closed
    }

    let eventLoop: EventLoop
    /// The servers, tried in turn: the nodes of a cluster (one URL for a lone broker).
    let urls: [HubURL]
    /// Which of ``urls`` the client uses now.
    private var urlIndex = 0
    /// How many URLs a first connection has tried without success (it tries each once).
    private var firstConnectFailures = 0
    /// The server the client uses now.
    var url: HubURL { urls[urlIndex] }
    let configuration: HubClient.Configuration
    let logger: Logger
    private(set) var state: State = .idle
    private var transport: WebSocketClient?
    private var connection: WebSocketConnection?
    private var generation: UInt64 = 0
    private var everConnected = false
    private var attempt = 0
    private var attemptTimer: (any Cancellable)?
    private var reconnectTimer: (any Cancellable)?
    /// Work waiting for the connection to be welcomed (calls, subscribes).
    private var waiting: [(id: UInt64, run: (Result<WebSocketConnection, HubClientError>) -> Void)] = []
    private var nextWaitingID: UInt64 = 0
    private var subscriptions: [UInt64: any RemoteSubscriptionEndpoint] = [:]
    /// Subscriptions to subjects with history waiting for the next connection to resume.
    private var resuming: [any RemoteSubscriptionEndpoint] = []
    private var acks: [Int64: (Result<ServerMessage, HubClientError>) -> Void] = [:]
    private var nextID: UInt64 = 1
    private var nextAck: Int64 = 1
    /// A failure that explains the close that follows it (a protocol error, `unauthorized`).
    private var pendingFailure: HubClientError?
    private var closeCompletion: (() -> Void)?
    /// The session id of the current connection (from `welcome`).
    private(set) var session: String?
    /// How many times the client (re)connected successfully.
    private(set) var connectCount = 0

    init(urls: [HubURL], configuration: HubClient.Configuration, eventLoop: EventLoop, logger: Logger) {
        precondition(!urls.isEmpty, "a client needs a URL")
        self.urls = urls
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// The number of live subscriptions (for tests and diagnostics).
    var liveSubscriptionCount: Int { subscriptions.count }

    // MARK: - Waiting for the connection

    /// Runs `work` with the welcomed connection: now when open, else when the
    /// connection (or reconnection) succeeds; with the failure otherwise. Returns a
    /// token that ``cancelWaiting(_:)`` takes.
    @discardableResult
    func withConnection(_ work: @escaping (Result<WebSocketConnection, HubClientError>) -> Void) -> UInt64? {
        switch state {
        case let .open(connection):
            work(.success(connection))
            return nil
        case .closed:
            work(.failure(HubClientError(code: .closed, message: "the client is closed")))
            return nil
        case .idle:
            nextWaitingID += 1
            waiting.append((nextWaitingID, work))
            startAttempt()
            return nextWaitingID
        case .connecting, .waitingToReconnect:
            nextWaitingID += 1
            waiting.append((nextWaitingID, work))
            return nextWaitingID
        }
    }

    /// Removes waiting work (it timed out) without running it.
    func cancelWaiting(_ token: UInt64) {
        waiting.removeAll { $0.id == token }
    }

    private func flushWaiting(_ result: Result<WebSocketConnection, HubClientError>) {
        let work = waiting
        waiting = []
        for entry in work { entry.run(result) }
    }

    // MARK: - Connecting

    private func startAttempt() {
        generation += 1
        let generation = self.generation
        state = .connecting
        attempt += 1
        pendingFailure = nil
        if transport == nil {
            transport = SharedTransport.client(
                on: eventLoop,
                configuration: WebSocketClient.Configuration(
                    limits: .init(maximumMessageSize: configuration.maximumMessageSize),
                    pingInterval: configuration.pingInterval,
                    idleTimeout: configuration.pingInterval == 0 ? 0 : configuration.pingInterval * 2))
        }
        let authorization = configuration.tokenInHello ? nil : configuration.token.map { "Bearer \($0)" }
        logger.debug("connecting", metadata: ["url": "\(url)", "attempt": "\(attempt)"])
        let handler = ConnectionHandler(core: self, generation: generation)
        connection = transport!.connect(
            host: url.host, port: url.port, path: url.path, subprotocol: HubProtocol.subprotocol,
            authorization: authorization, tls: url.isSecure ? configuration.tls : nil, handler: handler)
        attemptTimer = eventLoop.scheduler.schedule(after: eventLoop.scheduler.now.advanced(by: configuration.connectTimeout)) {
            [weak self] in
            guard let self, self.generation == generation, case .connecting = self.state else { return }
            let seconds = self.configuration.connectTimeout
            self.attemptFailed(HubClientError(
                code: .timeout, message: "connecting to \(self.url) timed out after \(seconds)"))
        }
    }

    /// The handshake finished: send `hello` if configured, then wait for `welcome`.
    func didOpen(_ connection: WebSocketConnection, generation: UInt64) {
        guard generation == self.generation else { return }
        let tokenForHello = configuration.tokenInHello ? configuration.token : nil
        if configuration.clientName != nil || configuration.batch || tokenForHello != nil {
            send(.hello(token: tokenForHello, client: configuration.clientName, batch: configuration.batch), on: connection)
        }
    }

    private func welcomed(_ connection: WebSocketConnection, session: String) {
        guard case .connecting = state else { return }
        attemptTimer?.cancel()
        attemptTimer = nil
        state = .open(connection)
        everConnected = true
        attempt = 0
        firstConnectFailures = 0
        connectCount += 1
        self.session = session
        logger.debug("connected", metadata: ["url": "\(url)", "session": "\(session)"])
        // Subscriptions that survived the lost connection subscribe again first.
        let resumed = resuming
        resuming = []
        for endpoint in resumed { open(endpoint) }
        flushWaiting(.success(connection))
    }

    /// An attempt failed before `welcome` (refused, timed out, closed early).
    private func attemptFailed(_ error: HubClientError) {
        attemptTimer?.cancel()
        attemptTimer = nil
        generation += 1
        if let connection {
            self.connection = nil
            connection.handler = nil
            connection.abort()
        }
        logger.debug("connection attempt failed", metadata: ["url": "\(url)", "error": "\(error)"])
        let policy = configuration.reconnect
        let authFailure = error.code == HubClientError.Code(.unauthorized)
        if urls.count > 1, !authFailure {
            // The next server is tried next; a first connection tries each once at once.
            urlIndex = (urlIndex + 1) % urls.count
            if !everConnected {
                firstConnectFailures += 1
                if firstConnectFailures < urls.count {
                    startAttempt()
                    return
                }
                firstConnectFailures = 0
            }
        }
        if everConnected, policy.isEnabled, !authFailure,
            policy.maximumAttempts.map({ attempt < $0 }) ?? true
        {
            scheduleReconnect()
            return
        }
        state = .idle
        var reported = error
        if everConnected, policy.isEnabled, !authFailure {
            reported = HubClientError(
                code: .disconnected, message: "gave up reconnecting to \(url) after \(attempt) attempts: \(error.message)")
        }
        attempt = 0
        failResuming(reported)
        flushWaiting(.failure(reported))
    }

    private func scheduleReconnect() {
        state = .waitingToReconnect
        let delay = configuration.reconnect.delay(forAttempt: attempt + 1)
        logger.debug("reconnecting", metadata: ["url": "\(url)", "delay": "\(delay)"])
        reconnectTimer = eventLoop.scheduler.schedule(after: eventLoop.scheduler.now.advanced(by: delay)) { [weak self] in
            guard let self, case .waitingToReconnect = self.state else { return }
            self.reconnectTimer = nil
            self.startAttempt()
        }
    }

    func didFailToConnect(_ error: TransportError, generation: UInt64) {
        guard generation == self.generation else { return }
        connection = nil
        attemptFailed(HubClientError(
            code: .connectionFailed, message: "cannot connect to \(url): \(describe(error.message))"))
    }

    /// lws says "Unable to connect" for any socket failure: a probe of the same
    /// address tells "connection refused" (nothing listens) from other failures.
    private func describe(_ transportMessage: String) -> String {
        let lower = transportMessage.lowercased()
        if lower.contains("refused") { return "connection refused" }
        if lower.contains("unable to connect") || lower.contains("connect failed"),
            let reason = ConnectionProbe.reason(host: url.host, port: url.port)
        {
            return reason
        }
        return transportMessage
    }

    func didClose(code: WebSocketCloseCode?, reason: String, generation: UInt64) {
        if generation != self.generation {
            return
        }
        connection = nil
        let failure: HubClientError
        if let pendingFailure {
            failure = pendingFailure
        } else {
            var text = "disconnected from \(url)"
            if let code {
                text += reason.isEmpty ? " (close \(code.rawValue))" : ": \(reason) (close \(code.rawValue))"
            } else {
                text += ": the connection ended without a close frame"
            }
            failure = HubClientError(code: .disconnected, message: text, closeCode: code?.rawValue)
        }
        pendingFailure = nil
        switch state {
        case .connecting:
            attemptFailed(failure)
        case .open:
            lost(failure)
        case .closed:
            finishClose()
        case .idle, .waitingToReconnect:
            break
        }
    }

    /// An established connection was lost: pending calls fail; subscriptions to subjects
    /// with history wait to resume when the client reconnects, the others fail; then
    /// reconnect (or not) by the policy.
    private func lost(_ failure: HubClientError) {
        session = nil
        generation += 1
        let policy = configuration.reconnect
        let authFailure = failure.code == HubClientError.Code(.unauthorized)
        let reconnecting = policy.isEnabled && !authFailure
        // Before the subscriptions hear of it, so that one that resumes waits for the next connection.
        state = reconnecting ? .waitingToReconnect : .idle
        failEverything(failure, resuming: reconnecting)
        if reconnecting {
            attempt = 0
            // Another node of the cluster, when there are several: this one went away (or drains).
            if urls.count > 1 { urlIndex = (urlIndex + 1) % urls.count }
            scheduleReconnect()
        }
    }

    private func failEverything(_ failure: HubClientError, resuming canResume: Bool = false) {
        let live = subscriptions
        subscriptions = [:]
        let pending = acks
        acks = [:]
        for (_, subscription) in live.sorted(by: { $0.key < $1.key }) {
            if canResume, subscription.prepareToResume() {
                resuming.append(subscription)
            } else {
                subscription.fail(canResume ? failure.explainingNoHistory : failure)
            }
        }
        if !canResume { failResuming(failure) }
        for (_, completion) in pending.sorted(by: { $0.key < $1.key }) {
            completion(.failure(failure))
        }
    }

    /// The subscriptions waiting to resume fail: there will be no next connection.
    private func failResuming(_ failure: HubClientError) {
        let waiting = resuming
        resuming = []
        for endpoint in waiting { endpoint.fail(failure) }
    }

    /// A subscription waiting to resume was cancelled.
    func forgetResuming(_ endpoint: any RemoteSubscriptionEndpoint) {
        resuming.removeAll { $0 === endpoint }
    }

    // MARK: - Inbound

    func didReceive(
        _ payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind, from connection: WebSocketConnection,
        generation: UInt64
    ) {
        guard generation == self.generation else { return }
        guard kind == .text else {
            protocolViolation("the server sent a binary message", on: connection)
            return
        }
        let message: ServerMessage
        do throws(WireError) {
            message = try ServerMessage.decode(payload)
        } catch {
            protocolViolation("the server sent an invalid message: \(error)", on: connection)
            return
        }
        handle(message, from: connection)
    }

    private func protocolViolation(_ text: String, on connection: WebSocketConnection) {
        logger.warning("protocol error", metadata: ["url": "\(url)", "error": "\(text)"])
        pendingFailure = HubClientError(code: .protocolError, message: "\(text) (\(url))")
        connection.close(code: .policyViolation, reason: "protocol error", discardingQueued: true)
    }

    private func handle(_ message: ServerMessage, from connection: WebSocketConnection) {
        switch message {
        case let .welcome(_, session):
            welcomed(connection, session: session)
        case let .subscribed(id, _, history, recovered):
            subscriptions[id]?.confirmed(history: history, recovered: recovered)
        case let .next(id, value, offset):
            subscriptions[id]?.deliver(value, offset: offset)
        case let .nextBatch(id, values, offset):
            for (index, value) in values.enumerated() {
                guard let subscription = subscriptions[id] else { break }
                subscription.deliver(value, offset: offset.map { $0 + UInt64(index) })
            }
        case let .complete(id):
            subscriptions.removeValue(forKey: id)?.finish()
        case let .error(error, id?, _):
            guard let subscription = subscriptions.removeValue(forKey: id) else { break }
            // A server that shuts down ends each subscription before closing: one to a
            // subject with history resumes once the client has reconnected.
            if error.code == .shuttingDown, configuration.reconnect.isEnabled, subscription.prepareToResume() {
                resuming.append(subscription)
            } else {
                subscription.fail(HubClientError(server: error))
            }
        case let .error(error, nil, ack?):
            acks.removeValue(forKey: ack)?(.failure(HubClientError(server: error)))
        case let .error(error, nil, nil):
            logger.warning("server error", metadata: ["url": "\(url)", "error": "\(error)"])
            if error.code == .unauthorized || error.code == .shuttingDown {
                pendingFailure = HubClientError(server: error)
            }
        case let .ack(ack):
            acks.removeValue(forKey: ack)?(.success(message))
        case let .catalog(ack, _), let .entry(ack, _, _, _):
            acks.removeValue(forKey: ack)?(.success(message))
        }
    }

    // MARK: - Outbound

    /// Queues `message` on `connection`.
    func send(_ message: ClientMessage, on connection: WebSocketConnection) {
        connection.sendFrame(kind: .text) { storage in message.encode(into: &storage) }
    }

    /// Sends the acked request that `build` makes from an ack number once connected,
    /// and completes with the server's answer (`ack` or `catalog`) or a failure;
    /// the whole call is bounded by the request timeout.
    func call(
        _ build: @escaping (Int64) -> ClientMessage,
        completion: @escaping (Result<ServerMessage, HubClientError>) -> Void
    ) {
        let once = OnceCompletion(completion)
        var ackNumber: Int64?
        var waitToken: UInt64?
        let timeout = configuration.requestTimeout
        let timer = eventLoop.scheduler.schedule(after: eventLoop.scheduler.now.advanced(by: timeout)) { [weak self] in
            guard let self, !once.isDone else { return }
            if let ackNumber { self.acks[ackNumber] = nil }
            if let waitToken { self.cancelWaiting(waitToken) }
            once.complete(.failure(HubClientError(code: .timeout, message: "no answer from \(self.url) within \(timeout)")))
        }
        once.onComplete = { timer.cancel() }
        waitToken = withConnection { [weak self] result in
            guard let self, !once.isDone else { return }
            switch result {
            case let .failure(error):
                once.complete(.failure(error))
            case let .success(connection):
                let ack = self.nextAck
                self.nextAck = ack == WireFieldsLimit.maxAck ? 1 : ack + 1
                ackNumber = ack
                self.acks[ack] = { once.complete($0) }
                self.send(build(ack), on: connection)
            }
        }
    }

    // MARK: - Subscriptions

    /// Opens subscription `endpoint` once connected: assigns it the next id and
    /// sends `subscribe` with its demand so far.
    func open(_ endpoint: any RemoteSubscriptionEndpoint) {
        withConnection { [weak self] result in
            guard let self else { return }
            switch result {
            case let .failure(error):
                endpoint.fail(error)
            case let .success(connection):
                guard let request = endpoint.takeSubscribeRequest() else { return }
                let id = self.nextID
                self.nextID += 1
                self.subscriptions[id] = endpoint
                endpoint.didOpen(id: id)
                self.send(.subscribe(id: id, .valid(request)), on: connection)
            }
        }
    }

    /// Asks for `demand` more on the live subscription `id`.
    func request(_ demand: Subscribers.Demand, id: UInt64) {
        guard subscriptions[id] != nil, case let .open(connection) = state else { return }
        send(.request(id: id, .valid(WireDemand(demand))), on: connection)
    }

    /// Cancels the live subscription `id` (values still on the wire are ignored).
    func cancel(id: UInt64) {
        guard subscriptions.removeValue(forKey: id) != nil, case let .open(connection) = state else { return }
        send(.cancel(id: id), on: connection)
    }

    // MARK: - Closing

    /// Closes the client: everything live fails with `closed`, the connection is
    /// closed with 1000, and `completion` runs once it is gone (or after 2 s).
    func close(completion: @escaping () -> Void) {
        if case .closed = state {
            completion()
            return
        }
        let wasOpen: Bool
        if case .open = state { wasOpen = true } else { wasOpen = false }
        state = .closed
        attemptTimer?.cancel()
        reconnectTimer?.cancel()
        let failure = HubClientError(code: .closed, message: "the client was closed")
        failEverything(failure)
        failResuming(failure)
        flushWaiting(.failure(failure))
        guard let connection else {
            completion()
            return
        }
        if !wasOpen {
            self.connection = nil
            generation += 1
            connection.handler = nil
            connection.abort()
            completion()
            return
        }
        closeCompletion = completion
        connection.close(code: .normal, reason: "client closed")
        _ = eventLoop.scheduler.schedule(after: eventLoop.scheduler.now.advanced(by: .seconds(2))) { [weak self] in
            self?.finishClose()
        }
    }

    private func finishClose() {
        connection = nil
        let completion = closeCompletion
        closeCompletion = nil
        completion?()
    }
}
