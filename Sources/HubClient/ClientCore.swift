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
    let url: HubURL
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

    init(url: HubURL, configuration: HubClient.Configuration, eventLoop: EventLoop, logger: Logger) {
        self.url = url
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
    fileprivate func didOpen(_ connection: WebSocketConnection, generation: UInt64) {
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
        connectCount += 1
        self.session = session
        logger.debug("connected", metadata: ["url": "\(url)", "session": "\(session)"])
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

    fileprivate func didFailToConnect(_ error: TransportError, generation: UInt64) {
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

    fileprivate func didClose(code: WebSocketCloseCode?, reason: String, generation: UInt64) {
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

    /// An established connection was lost: subscriptions and pending calls fail;
    /// then reconnect (or not) by the policy.
    private func lost(_ failure: HubClientError) {
        session = nil
        generation += 1
        failEverything(failure)
        let policy = configuration.reconnect
        let authFailure = failure.code == HubClientError.Code(.unauthorized)
        if policy.isEnabled, !authFailure {
            attempt = 0
            scheduleReconnect()
        } else {
            state = .idle
        }
    }

    private func failEverything(_ failure: HubClientError) {
        let live = subscriptions
        subscriptions = [:]
        let pending = acks
        acks = [:]
        for (_, subscription) in live.sorted(by: { $0.key < $1.key }) {
            subscription.fail(failure)
        }
        for (_, completion) in pending.sorted(by: { $0.key < $1.key }) {
            completion(.failure(failure))
        }
    }

    // MARK: - Inbound

    fileprivate func didReceive(
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
        case .subscribed:
            break
        case let .next(id, value):
            subscriptions[id]?.deliver(value)
        case let .nextBatch(id, values):
            for value in values {
                guard let subscription = subscriptions[id] else { break }
                subscription.deliver(value)
            }
        case let .complete(id):
            subscriptions.removeValue(forKey: id)?.finish()
        case let .error(error, id?, _):
            subscriptions.removeValue(forKey: id)?.fail(HubClientError(server: error))
        case let .error(error, nil, ack?):
            acks.removeValue(forKey: ack)?(.failure(HubClientError(server: error)))
        case let .error(error, nil, nil):
            logger.warning("server error", metadata: ["url": "\(url)", "error": "\(error)"])
            if error.code == .unauthorized || error.code == .shuttingDown {
                pendingFailure = HubClientError(server: error)
            }
        case let .ack(ack):
            acks.removeValue(forKey: ack)?(.success(message))
        case let .catalog(ack, _):
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

/// The largest ack the client uses before wrapping around to 1 (2^53−1).
enum WireFieldsLimit {
    static let maxAck: Int64 = (1 << 53) - 1
}

/// A completion that runs once; later results are dropped. Loop thread only.
final class OnceCompletion<T> {
    private var completion: ((T) -> Void)?
    /// Runs after the completion (for example to cancel a timer).
    var onComplete: (() -> Void)?

    init(_ completion: @escaping (T) -> Void) { self.completion = completion }

    var isDone: Bool { completion == nil }

    func complete(_ value: T) {
        guard let completion else { return }
        self.completion = nil
        completion(value)
        onComplete?()
        onComplete = nil
    }
}

/// Routes one connection's events to the core, tagged with the attempt they belong to.
private final class ConnectionHandler: WebSocketConnectionHandler {
    let core: ClientCore
    let generation: UInt64

    init(core: ClientCore, generation: UInt64) {
        self.core = core
        self.generation = generation
    }

    func connectionDidOpen(_ connection: WebSocketConnection) {
        core.didOpen(connection, generation: generation)
    }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        core.didReceive(payload, kind: kind, from: connection, generation: generation)
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        core.didClose(code: code, reason: reason, generation: generation)
    }

    func connection(_ connection: WebSocketConnection, didFailToConnect error: TransportError) {
        core.didFailToConnect(error, generation: generation)
    }
}
