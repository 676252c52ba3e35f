import HubEngine
import HubValue
import HubWire
import HubPipeline
import HubRegistry
import Logging

/// The protocol state machine of one connection (PROTOCOL.md): it decodes the
/// client's messages (authentication included) and runs them against the hub.
///
/// The data path reads top-down: a frame's text arrives in ``receive(text:)``, a
/// `subscribe` resolves a name or compiles a pipeline on the ``Hub`` (a subject's
/// publisher, its operators), and attaches a ``RemoteSubscriber`` at the end; the
/// values it receives go out through the session's ``SessionOutbound`` as `next`
/// frames. The session keeps the table of live subscriptions for the client's
/// `request` and `cancel`.
///
/// Transport-agnostic: it talks to a ``SessionConnection``. Confined to the
/// hub's event loop.
public final class Session {
    /// The opaque id sent in `welcome`.
    public let id: String
    /// The hub the session works on.
    public let hub: Hub
    private let configuration: SessionConfiguration
    private let outbound: SessionOutbound
    private let subscriptions = SessionSubscriptions()
    private let logger: Logger
    private var batchAll = false
    private var authenticated: Bool
    private var authenticationTimer: (any Cancellable)?
    /// A bearer token on the upgrade request that is not accepted (refused at start).
    private var refusedBearer = false
    /// The token the client authenticated with, if any.
    private var token: String?
    /// What this connection's pipelines and buffers spend.
    let budget: ResourceBudget
    /// Whether the session has ended (connection closed, slow consumer, refusal, shutdown).
    public var isClosed: Bool { outbound.isClosed }
    /// The service loop's counters this session adds to.
    private let counters: ServiceCounters
    /// The service, for `list`'s connection count and the admin operations.
    weak var service: (any ServiceControl)?
    /// The client's name from `hello`, if it gave one (for logs and `$sys.connections`).
    public private(set) var clientName: String?
    /// Whether the client is authenticated (always, on a server without auth).
    public var isAuthenticated: Bool { authenticated }

    /// A session for a new connection. `authorization` is the upgrade request's
    /// `Authorization` header, if any.
    public init(
        id: String, hub: Hub, connection: any SessionConnection, configuration: SessionConfiguration,
        authorization: String?, encodingCache: ValueEncodingCache, logger: Logger,
        counters: ServiceCounters = ServiceCounters()
    ) {
        self.id = id
        self.hub = hub
        self.configuration = configuration
        self.logger = logger
        self.counters = counters
        let scheduler = hub.scheduler
        budget = ResourceBudget(
            owner: "this connection", limits: configuration.connectionBudget, clock: { scheduler.now })
        outbound = SessionOutbound(
            connection: connection, subscriptions: subscriptions, encodingCache: encodingCache,
            scheduler: hub.scheduler, maxQueuedBytes: configuration.maxQueuedBytes,
            closeTimeout: configuration.closeTimeout, logger: logger, counters: counters)
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
        outbound.send(.welcome(server: configuration.serverName, session: id))
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
        authenticationTimer.take()?.cancel()
        outbound.connectionClosed()
    }

    /// The server is stopping: subscriptions are cancelled and the connection closed with 1001.
    /// Each live subscription first ends with `error` code `shutting_down` (in id
    /// order), so a client knows which streams the shutdown cut.
    public func shutDown() {
        end(closing: .goingAway, reason: "server shutting down")
    }

    /// The server is draining (lame duck): as ``shutDown()``, but the close is 1012
    /// (service restart), so that the client reconnects, to another server.
    public func drain() {
        end(closing: .serviceRestart, reason: "server draining")
    }

    private func end(closing code: HubCloseCode, reason: String) {
        guard !isClosed else { return }
        authenticationTimer.take()?.cancel()
        for id in subscriptions.sortedIDs {
            outbound.sendError(HubError(.shuttingDown, "the server is \(code == .serviceRestart ? "draining" : "shutting down")"), id: id, ack: nil)
        }
        outbound.end(closing: code, reason: reason, discardingQueued: false)
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
            subscriptions.remove(id: id)?.cancel()
        case .send(let name, let value, let ack):
            perform(ack: ack) { () throws(HubError) in
                try checkWritable(name)
                let subject = try hub.openSubject(named: name)
                let sender = self.sender
                try hub.validate(value, for: subject, sender: sender)
                return { [hub] in hub.publish(value, to: subject, sender: sender) }
            }
        case .complete(let name, let ack):
            perform(ack: ack) { () throws(HubError) in
                try checkWritable(name)
                let subject = try hub.openSubject(named: name)
                return { subject.send(completion: .finished) }
            }
        case .fail(let name, let error, let ack):
            perform(ack: ack) { () throws(HubError) in
                try checkWritable(name)
                let subject = try hub.openSubject(named: name)
                return { subject.fail(with: error) }
            }
        case .trigger(let name, let key, let ack):
            perform(ack: ack) { () throws(HubError) in
                let trigger = try hub.trigger(named: name)
                return { [hub] in hub.activate(trigger, key: key) }
            }
        case .list(let ack):
            var catalog = hub.catalog()
            catalog.connections = service?.connectionCount
            outbound.send(.catalog(ack: ack, catalog))
        case .delete(let name, let ack):
            perform(ack: ack) { () throws(HubError) in
                try checkWritable(name)
                guard case .subject = hub.entry(named: name) else {
                    _ = try hub.subject(named: name)  // the not_found that names what it is
                    throw HubError(.notFound, "no subject named '\(name)'")
                }
                return { [hub, logger] in
                    try? hub.delete(name)
                    logger.info("subject deleted", metadata: ["subject": "\(name)"])
                }
            }
        case .drain(let grace, let ack):
            perform(ack: ack) { () throws(HubError) in
                try checkAdmin("drain")
                guard let service else { throw HubError(.forbidden, "this server cannot be drained from a client") }
                return { [clientName, id] in
                    _ = service.drain(grace: grace, requestedBy: "client \(clientName ?? "?") (session \(id))")
                }
            }
        }
    }

    // MARK: Permissions
    //
    // The seam for issue 12's identities and permissions: until they land, an authenticated
    // client (every client, on a server without auth) may publish and administer.

    /// Whether this client has the `admin` permission (system subjects, drain).
    var mayAdminister: Bool { authenticated }

    /// Refuses an admin operation to a client without the `admin` permission.
    private func checkAdmin(_ what: String) throws(HubError) {
        guard mayAdminister else { throw HubError(.forbidden, "\(what) needs the admin permission") }
    }

    /// Refuses `send`, `complete`, `fail` and `delete` on a system subject (only the
    /// broker writes them).
    private func checkWritable(_ name: String) throws(HubError) {
        if HubName.isSystem(name) {
            throw HubError(.forbidden, "'\(name)' is a system subject: only the broker writes it")
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
        if let ack { outbound.send(.ack(ack)) }
        effect()
    }

    /// Who sends this session's values, for the logs of what they cause: the session id,
    /// and the client's name from `hello` when it gave one.
    private var sender: String {
        guard let clientName else { return "session \(id)" }
        return "session \(id) (client \(Value.string(clientName).jsonString()))"
    }

    private func hello(token: String?, client: String?, batch: Bool) {
        if let client {
            clientName = String(client.prefix(128))
            outbound.logger[metadataKey: "client"] = "\(clientName!)"
        }
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
        let counters: NameCounters
        var pipeline: String?
        do throws(HubError) {
            switch request.target {
            case .name(let name):
                if HubName.isSystem(name) {
                    try checkAdmin("subscribing to '\(name)'")
                    service?.refreshSystemSubjects()
                }
                let resolved = try hub.publisher(
                    for: name, bufferSize: request.buffer, overflow: request.overflow, memory: budget)
                switch resolved.entry {
                case .subject: kind = .subject
                case .trigger: kind = .trigger
                case .pipeline:
                    kind = .pipeline
                    pipeline = name
                }
                counters = resolved.entry.counters
                publisher = resolved.publisher
            case .pipeline(let source):
                guard configuration.allowsPipelines else {
                    throw HubError(.forbidden, "this server does not accept ad-hoc pipelines")
                }
                if let allowed = configuration.pipelineTokens, !(token.map(allowed.contains) ?? false) {
                    throw HubError(.forbidden, "this client's token may not subscribe to ad-hoc pipelines")
                }
                publisher = try hub.compile(
                    pipeline: source, bufferSize: request.buffer, overflow: request.overflow, budget: budget)
                kind = .pipeline
                pipeline = "ad-hoc"
                counters = hub.metrics.adHoc
            }
        } catch {
            sendError(error, id: id, ack: nil)
            return
        }
        let remote = RemoteSubscriber(
            id: id, batch: request.batch ?? batchAll, outbound: outbound, subscriptions: subscriptions,
            counters: counters, pipeline: pipeline, origin: hub.origin)
        subscriptions.insert(remote)
        outbound.send(.subscribed(id: id, kind: kind))
        remote.grant(Subscribers.Demand(request.demand))
        publisher.subscribe(remote)
    }

    private func request(id: UInt64, _ check: DemandCheck) {
        guard let remote = subscriptions[id] else { return }
        switch check {
        case .valid(let demand):
            remote.grant(Subscribers.Demand(demand))
        case .invalid(let error):
            subscriptions.remove(id: id)
            remote.cancel()
            sendError(error, id: id, ack: nil)
        }
    }

    // MARK: Refusing

    private func sendError(_ error: HubError, id: UInt64?, ack: Int64?) {
        switch error.code {
        case .badMessage, .unknownOp, .duplicateId, .invalidDemand:
            counters.protocolErrors += 1
            counters.emit("protocol_error", [
                "session": .string(self.id), "code": .string(error.code.rawValue), "message": .string(error.message),
            ])
            outbound.logger.notice(
                "protocol error", metadata: ["code": "\(error.code)", "error": "\(error.message)"])
        default:
            break
        }
        outbound.sendError(error, id: id, ack: ack)
    }

    private func refuseUnauthenticated(_ reason: String) {
        guard !isClosed else { return }
        authenticationTimer.take()?.cancel()
        counters.authFailures += 1
        counters.emit("auth_failure", ["session": .string(id), "reason": .string(reason)])
        outbound.logger.warning("authentication failed", metadata: ["reason": "\(reason)"])
        outbound.sendError(HubError(.unauthorized, reason), id: nil, ack: nil)
        outbound.end(closing: .unauthorized, reason: "unauthorized", discardingQueued: false)
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
