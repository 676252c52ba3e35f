import HubEngine
import HubValue
import HubWire
import HubRegistry
import Logging

/// The protocol state machine of one connection (PROTOCOL.md): it decodes the
/// client's messages, runs them against the hub, keeps the connection's
/// subscriptions with their demand, and writes the server's messages.
///
/// Transport-agnostic: it talks to a ``SessionConnection``. Confined to the
/// hub's event loop.
public final class Session {
    /// The opaque id sent in `welcome`.
    public let id: String
    /// The hub the session works on.
    public let hub: Hub
    private let connection: any SessionConnection
    private let configuration: SessionConfiguration
    private let encodingCache: ValueEncodingCache
    private let logger: Logger
    // @exclusivity(unchecked) on the hot fields below: this object is confined to its
    // event loop and nothing re-enters it while one of these accesses is open, so the dynamic
    // check (a runtime call per access, the release builds once skipped it by a flag) only costs.
    @exclusivity(unchecked) private var subscriptions: [UInt64: RemoteSubscription] = [:]
    @exclusivity(unchecked) private var batchAll = false
    @exclusivity(unchecked) private var authenticated: Bool
    private var authenticationTimer: (any Cancellable)?
    /// Drops a connection the session closed once its close frame has had `closeTimeout`.
    private var closeTimer: (any Cancellable)?
    /// A bearer token on the upgrade request that is not accepted (refused at start).
    private var refusedBearer = false
    private var clientName: String?
    /// The token the client authenticated with, if any.
    private var token: String?
    /// Whether the session has ended (connection closed, slow consumer, shutdown).
    @exclusivity(unchecked) public private(set) var isClosed = false

    /// A session for a new connection. `authorization` is the upgrade request's
    /// `Authorization` header, if any.
    public init(
        id: String, hub: Hub, connection: any SessionConnection, configuration: SessionConfiguration,
        authorization: String?, encodingCache: ValueEncodingCache, logger: Logger
    ) {
        self.id = id
        self.hub = hub
        self.connection = connection
        self.configuration = configuration
        self.encodingCache = encodingCache
        self.logger = logger
        if let tokens = configuration.tokens {
            let bearer = Session.bearerToken(authorization)
            authenticated = bearer.map(tokens.contains) ?? false
            refusedBearer = bearer != nil && !authenticated
            if authenticated { token = bearer }
        } else {
            authenticated = true
        }
    }

    /// The number of live subscriptions.
    public var subscriptionCount: Int { subscriptions.count }

    /// Sends `welcome` and, when authentication is required and not yet given,
    /// starts the clock for `hello` (or, after a wrong bearer token, refuses at once).
    public func start() {
        send(.welcome(server: configuration.serverName, session: id))
        if refusedBearer {
            // A wrong token is refused at once (PROTOCOL.md §2), wherever it came from.
            refuseUnauthenticated("the bearer token is not accepted")
            return
        }
        if !authenticated {
            let deadline = hub.scheduler.now.advanced(by: configuration.authenticationTimeout)
            authenticationTimer = hub.scheduler.schedule(after: deadline) { [weak self] in
                guard let self, !self.authenticated, !self.isClosed else { return }
                self.refuseUnauthenticated("no token within \(self.configuration.authenticationTimeout)")
            }
        }
    }

    // MARK: Inbound

    /// Handles one complete text message.
    public func receive(text payload: UnsafeRawBufferPointer) {
        guard !isClosed else { return }
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(payload)
        } catch {
            // Before authentication, anything but a valid hello is refused (PROTOCOL.md §2).
            guard authenticated else {
                refuseUnauthenticated("authenticate with a hello carrying a token first (\(error.error.message))")
                return
            }
            sendError(error.error, id: nil, ack: error.ack)
            return
        }
        guard authenticated || isHello(message) else {
            refuseUnauthenticated("authenticate with a hello carrying a token first")
            return
        }
        handle(message)
    }

    /// Handles a binary message: the protocol has none.
    public func receiveBinary() {
        guard !isClosed else { return }
        guard authenticated else {
            refuseUnauthenticated("authenticate with a hello carrying a token first")
            return
        }
        sendError(HubError(.badMessage, "binary messages are not part of protocol v1; send JSON text"), id: nil, ack: nil)
    }

    /// The connection closed: every subscription is cancelled upstream, and the
    /// session's timers are cancelled (also when the session had closed it itself).
    public func connectionClosed() {
        closeTimer.take()?.cancel()
        authenticationTimer.take()?.cancel()
        guard !isClosed else { return }
        isClosed = true
        cancelAll()
    }

    /// The server is stopping: subscriptions are cancelled and the connection closed with 1001.
    /// Each live subscription first ends with `error` code `shutting_down` (in id
    /// order), so a client knows which streams the shutdown cut.
    public func shutDown() {
        guard !isClosed else { return }
        let live = subscriptions.keys.sorted()
        for id in live {
            sendError(HubError(.shuttingDown, "the server is shutting down"), id: id, ack: nil)
        }
        isClosed = true
        cancelAll()
        connection.close(code: 1001, reason: "server shutting down", discardingQueued: false)
    }

    private func isHello(_ message: ClientMessage) -> Bool {
        if case .hello = message { return true }
        return false
    }

    private func handle(_ message: ClientMessage) {
        switch message {
        case .hello(let token, let client, let batch):
            hello(token: token, client: client, batch: batch)
        case .subscribe(let id, let check):
            subscribe(id: id, check)
        case .request(let id, let check):
            request(id: id, check)
        case .cancel(let id):
            subscriptions.removeValue(forKey: id)?.cancel()
        case .send(let name, let value, let ack):
            perform(ack: ack) { () throws(HubError) in
                let subject = try hub.openSubject(named: name)
                return { [hub] in hub.publish(value, to: subject) }
            }
        case .complete(let name, let ack):
            perform(ack: ack) { () throws(HubError) in
                let subject = try hub.openSubject(named: name)
                return { subject.send(completion: .finished) }
            }
        case .fail(let name, let error, let ack):
            perform(ack: ack) { () throws(HubError) in
                let subject = try hub.openSubject(named: name)
                return { subject.fail(with: error) }
            }
        case .trigger(let name, let key, let ack):
            perform(ack: ack) { () throws(HubError) in
                let trigger = try hub.trigger(named: name)
                return { [hub] in hub.activate(trigger, key: key) }
            }
        case .list(let ack):
            send(.catalog(ack: ack, hub.catalog()))
        }
    }

    /// Runs a request in two steps: `check` validates and returns the effect; the
    /// `ack` (if any) is queued before the effect runs, so that it precedes the
    /// messages the effect causes on this connection (PROTOCOL.md §3).
    private func perform(ack: Int64?, _ check: () throws(HubError) -> () -> Void) {
        let effect: () -> Void
        do {
            effect = try check()
        } catch {
            sendError(error, id: nil, ack: ack)
            return
        }
        if let ack { send(.ack(ack)) }
        effect()
    }

    private func hello(token: String?, client: String?, batch: Bool) {
        if let client { clientName = client }
        if batch { batchAll = true }
        guard let tokens = configuration.tokens, !authenticated else { return }
        guard let token, tokens.contains(token) else {
            refuseUnauthenticated(token == nil ? "hello carries no token" : "the token is not accepted")
            return
        }
        authenticated = true
        self.token = token
        authenticationTimer.take()?.cancel()
    }

    private func subscribe(id: UInt64, _ check: SubscribeCheck) {
        guard subscriptions[id] == nil else {
            sendError(HubError(.duplicateId, "subscription id \(id) is still live", data: ["id": .int(Int64(id))]), id: nil, ack: nil)
            return
        }
        let request: SubscribeRequest
        switch check {
        case .invalid(let error):
            sendError(error, id: id, ack: nil)
            return
        case .valid(let valid):
            request = valid
        }
        guard subscriptions.count < configuration.maxSubscriptions else {
            sendError(HubError(.limitExceeded, "at most \(configuration.maxSubscriptions) live subscriptions per connection"), id: id, ack: nil)
            return
        }
        let kind: SubscriptionKind
        let publisher: AnyPublisher<Value, HubError>
        do throws(HubError) {
            switch request.target {
            case .name(let name):
                let resolved = try hub.publisher(for: name, bufferSize: request.buffer, overflow: request.overflow)
                switch resolved.entry {
                case .subject: kind = .subject
                case .trigger: kind = .trigger
                case .pipeline: kind = .pipeline
                }
                publisher = resolved.publisher
            case .pipeline(let source):
                guard configuration.allowsPipelines else {
                    throw HubError(.forbidden, "this server does not accept ad-hoc pipelines")
                }
                if let allowed = configuration.pipelineTokens, !(token.map(allowed.contains) ?? false) {
                    throw HubError(.forbidden, "this client's token may not subscribe to ad-hoc pipelines")
                }
                publisher = try hub.compile(pipeline: source, bufferSize: request.buffer, overflow: request.overflow)
                kind = .pipeline
            }
        } catch {
            sendError(error, id: id, ack: nil)
            return
        }
        let remote = RemoteSubscription(id: id, batch: request.batch ?? batchAll, session: self)
        subscriptions[id] = remote
        send(.subscribed(id: id, kind: kind))
        remote.grant(request.demand)
        publisher.subscribe(remote)
    }

    private func request(id: UInt64, _ check: DemandCheck) {
        guard let remote = subscriptions[id] else { return }
        switch check {
        case .valid(let demand):
            remote.grant(demand)
        case .invalid(let error):
            subscriptions.removeValue(forKey: id)
            remote.cancel()
            sendError(error, id: id, ack: nil)
        }
    }

    // MARK: Outbound

    /// Writes one value of `subscription` as `next` (or into its batch).
    func deliver(_ value: Value, to subscription: RemoteSubscription) {
        guard !isClosed else { return }
        let id = subscription.id
        if subscription.batch {
            connection.sendBatched(key: id, closing: Session.batchClosing) { buffer, opensMessage in
                if opensMessage {
                    ServerMessage.appendNextBatchHead(id: id, into: &buffer)
                } else {
                    buffer.append(UInt8(ascii: ","))
                }
                encodingCache.append(value, to: &buffer)
            }
        } else {
            // The value's JSON, encoded once for every subscriber, goes straight into
            // the connection's queue between the envelope's two parts.
            let connection = self.connection
            encodingCache.withEncoded(value) { body in
                subscription.nextHead.withUnsafeBytes { head in
                    Session.nextClosing.withUnsafeBytes { closing in
                        _ = connection.sendMessage(prefix: head, body: body, suffix: closing)
                    }
                }
            }
        }
        checkQueue()
    }

    /// Writes the end of `subscription`: `complete`, or `error` with its id.
    func finish(_ subscription: RemoteSubscription, with completion: Subscribers.Completion<HubError>) {
        guard subscriptions[subscription.id] === subscription else { return }
        subscriptions.removeValue(forKey: subscription.id)
        guard !isClosed else { return }
        switch completion {
        case .finished:
            send(.complete(id: subscription.id))
        case .failure(let error):
            sendError(error, id: subscription.id, ack: nil)
        }
    }

    private static let batchClosing: [UInt8] = Array("]}".utf8)
    private static let nextClosing: [UInt8] = [UInt8(ascii: "}")]

    private func send(_ message: ServerMessage) {
        guard !isClosed else { return }
        connection.sendMessage { buffer in message.encode(into: &buffer) }
        checkQueue()
    }

    private func sendError(_ error: HubError, id: UInt64?, ack: Int64?) {
        send(.error(error, id: id, ack: ack))
    }

    /// Closes a connection whose client stopped reading (PROTOCOL.md §5.8).
    private func checkQueue() {
        guard connection.queuedBytes > configuration.maxQueuedBytes, !isClosed else { return }
        logger.warning("closing slow consumer", metadata: [
            "session": "\(id)", "queued": "\(connection.queuedBytes)", "client": "\(clientName ?? "-")",
        ])
        isClosed = true
        cancelAll()
        close(code: 4008, reason: "slow consumer", discardingQueued: true)
    }

    private func refuseUnauthenticated(_ reason: String) {
        guard !isClosed else { return }
        sendError(HubError(.unauthorized, reason), id: nil, ack: nil)
        isClosed = true
        cancelAll()
        close(code: 4401, reason: "unauthorized", discardingQueued: false)
    }

    /// Closes the connection, and drops it if the close frame has not gone out within
    /// `closeTimeout`: a client that stopped reading cannot hold the connection (and
    /// what lws buffered for it) forever, and one that resumes in time still gets the
    /// close frame (PROTOCOL.md §5.8).
    private func close(code: UInt16, reason: String, discardingQueued: Bool) {
        connection.close(code: code, reason: reason, discardingQueued: discardingQueued)
        let deadline = hub.scheduler.now.advanced(by: configuration.closeTimeout)
        closeTimer = hub.scheduler.schedule(after: deadline) { [weak self] in
            guard let self, self.closeTimer != nil else { return }
            self.closeTimer = nil
            self.logger.info("dropping a connection that did not take its close frame", metadata: ["session": "\(self.id)"])
            self.connection.abort()
        }
    }

    private func cancelAll() {
        authenticationTimer.take()?.cancel()
        let live = subscriptions.values
        subscriptions.removeAll()
        for subscription in live { subscription.cancel() }
    }

    /// The token of an `Authorization: Bearer <token>` header.
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].drop { $0 == " " }
        return token.isEmpty ? nil : String(token)
    }
}
