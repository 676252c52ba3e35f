import HubEngine
import HubValue
import HubWire
import HubPipeline
import HubRegistry
import Logging

/// The protocol of one connection (PROTOCOL.md): it decodes the client's messages and
/// dispatches them to the hub. Where the client is in authenticating and being admitted
/// is ``SessionAuthentication``'s to decide; the session carries its actions out
/// (`Session+Authentication.swift`), checks permissions (`Session+Permissions.swift`) and
/// runs the operations (`Session+Publishing.swift`, `Session+Subscribing.swift`).
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
    let configuration: SessionConfiguration
    let outbound: SessionOutbound
    let subscriptions = SessionSubscriptions()
    /// Slows this connection down while a subject it sends to is congested.
    let brake: PublisherBrake
    /// This connection's values waiting for the durable store: how many, and their bytes.
    var storing = 0
    var storingBytes = 0
    /// The offset of the value this session stored last (set just before its `ack` goes
    /// out): what an HTTP publish answers with.
    var lastStoredOffset: UInt64?
    /// From this many values (or ``maxStoringBytes``) waiting for the store, the session
    /// stops reading the connection until half of them are stored.
    static let maxStoring = 4096
    static let maxStoringBytes = 8 << 20
    let logger: Logger
    var batchAll = false
    /// Where the client is in authenticating and being admitted (the bearer token, `hello`,
    /// the timers, the admission): the decisions, which this session carries out.
    var auth: SessionAuthentication
    /// Who the client is, once authenticated (at once, as `anonymous`, on a server without auth).
    var authentication: Authentication? { auth.authentication }
    var authenticated: Bool { auth.isAuthenticated }
    /// Checks tokens; `nil` on a server without authentication.
    let authenticator: Authenticator?
    /// The service's admission of connections (limits per service and identity), if any:
    /// set before ``start()``.
    weak var admission: Admission?
    var authenticationTimer: (any Cancellable)?
    /// Ends the connection when its token expires (unless a `hello` refreshes it).
    var expiryTimer: (any Cancellable)?
    /// The connection's inbound rate limits, if it has any.
    var rateLimiter: InboundRateLimiter?
    /// The permissions checked, by name: a bit per operation allowed, and one per
    /// operation checked (so that a `send` stream matches its patterns once).
    var permissionCache: [String: UInt16] = [:]
    /// What this connection's pipelines and buffers spend (with its identity's budget as
    /// parent, once admitted).
    var budget: ResourceBudget
    /// Whether the session has ended (connection closed, slow consumer, refusal, shutdown).
    public var isClosed: Bool { outbound.isClosed }
    /// The service loop's counters this session adds to.
    let counters: ServiceCounters
    /// The service, for `list`'s connection count and the admin operations.
    weak var service: (any ServiceControl)?
    /// The client's name from `hello`, if it gave one (for logs and `$sys.connections`).
    public internal(set) var clientName: String? {
        didSet { sender = Session.sender(id: id, clientName: clientName) }
    }
    /// Who sends this session's values, for the logs of what they cause: kept rather than
    /// built for every value sent.
    var sender: String
    /// Whether the client is authenticated (always, on a server without auth).
    public var isAuthenticated: Bool { authenticated }
    /// Who the client is, once authenticated.
    public var identity: Identity? { authentication?.identity }
    /// Whether the connection waits for a `hello` with a token (for the admission pool).
    var isWaitingForAuthentication: Bool { auth.isWaitingInPool && !isClosed }

    /// A session for a new connection. `authorization` is the upgrade request's
    /// `Authorization` header, if any.
    ///
    /// `authenticator` checks tokens (`nil`: the server requires none, unless
    /// `configuration` has tokens: then an authenticator of those).
    public init(
        id: String, hub: Hub, connection: any SessionConnection, configuration: SessionConfiguration,
        authorization: String?, encodingCache: ValueEncodingCache, logger: Logger,
        counters: ServiceCounters = ServiceCounters(), authenticator: Authenticator? = nil
    ) {
        self.id = id
        sender = Session.sender(id: id, clientName: nil)
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
        brake = PublisherBrake(connection: connection, scheduler: hub.scheduler, maximumWait: configuration.publisherWait)
        let authenticator = authenticator ?? (configuration.requiresAuthentication
            ? Authenticator(tokens: configuration.tokens ?? [], configuration: configuration.auth ?? AuthConfiguration())
            : nil)
        self.authenticator = authenticator
        if !configuration.inboundRate.isUnlimited {
            rateLimiter = InboundRateLimiter(limits: configuration.inboundRate, now: hub.scheduler.now.nanoseconds)
        }
        var bearer = SessionAuthentication.Bearer.none
        if let authenticator, let token = Session.bearerToken(authorization) {
            do {
                bearer = .accepted(try authenticator.authenticate(token, now: Session.wallSeconds(hub)), token: token)
            } catch {
                bearer = .refused("the bearer token is not accepted: \(error.message)")
            }
        }
        auth = SessionAuthentication(
            requiresAuthentication: authenticator != nil, bearer: bearer,
            authenticationTimeout: configuration.authenticationTimeout)
    }

    /// The hub's calendar time in seconds since the epoch (JWT claims' clock).
    static func wallSeconds(_ hub: Hub) -> Double {
        Double(hub.wallClock().nanoseconds) / 1e9
    }

    /// The number of live subscriptions.
    public var subscriptionCount: Int { subscriptions.count }

    /// The connection's protocol errors and pipeline failures so far (for its close line:
    /// past a few, they are no longer logged one by one).
    var problemCount: Int { outbound.problems }

    /// Sends `welcome` and, when authentication is required and not yet given,
    /// starts the clock for `hello` (or, after a wrong bearer token, refuses at once).
    public func start() {
        carryOut(auth.start())
    }

    // MARK: Inbound

    /// Handles one complete text message.
    public func receive(text payload: UnsafeRawBufferPointer) {
        guard !isClosed, withinRate(bytes: payload.count) else { return }
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(payload)
        } catch {
            // Before authentication, anything but a valid hello is refused (PROTOCOL.md §2).
            if let refusal = auth.received(.undecodable(error.error.message)) {
                carryOut(refusal)
                return
            }
            sendError(error.error, id: nil, ack: error.ack)
            return
        }
        if let refusal = auth.received(isHello(message) ? .hello : .message) {
            carryOut(refusal)
            return
        }
        handle(message)
    }

    /// The connection's outbound queue is empty: replays waiting for room read on. (The
    /// server's own handlers wake ``outboundRoom`` directly.)
    public func outboundDrained() {
        outbound.room.drained()
    }

    /// Who waits for room in the connection's outbound queue: its handler tells it when the
    /// queue drains.
    var outboundRoom: OutboundRoom { outbound.room }

    /// Handles a binary message of `bytes` bytes: the protocol has none.
    public func receiveBinary(bytes: Int = 0) {
        guard !isClosed, withinRate(bytes: bytes) else { return }
        if let refusal = auth.received(.binary) {
            carryOut(refusal)
            return
        }
        sendError(HubError(.badMessage, "binary messages are not part of protocol v1; send JSON text"), id: nil, ack: nil)
    }

    /// Whether a message of `bytes` bytes is within the connection's rate limits; if not,
    /// the client gets `limit_exceeded` naming the limit and the connection is closed with
    /// 4429 (what was queued before still goes out first).
    func withinRate(bytes: Int) -> Bool {
        guard rateLimiter != nil, let (limit, value) = rateLimiter!.admit(bytes: bytes, now: hub.scheduler.now.nanoseconds) else {
            return true
        }
        let unit = limit == "messagesPerSecond" ? "messages" : "bytes"
        let error = HubError(
            .limitExceeded, "this connection sent more than \(value) \(unit) a second (limits.perConnection.\(limit))",
            data: ["limit": .string(limit), "value": .int(Int64(value))])
        counters.rateLimitCloses += 1
        outbound.logger.warning("rate limit exceeded: closing", metadata: ["limit": "\(limit)", "value": "\(value)"])
        counters.emit("rate_limited", ["session": .string(id), "limit": .string(limit)])
        outbound.sendError(error, id: nil, ack: nil)
        outbound.end(closing: .rateLimited, reason: "rate limit: \(limit)", discardingQueued: false)
        return false
    }

    /// The connection closed: every subscription is cancelled upstream, and the
    /// session's timers are cancelled (also when the session had closed it itself).
    public func connectionClosed() {
        carryOut(auth.closed())
        brake.release()
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

    func end(closing code: HubCloseCode, reason: String) {
        guard !isClosed else { return }
        carryOut(auth.ending())
        for id in subscriptions.sortedIDs {
            outbound.sendError(HubError(.shuttingDown, "the server is \(code == .serviceRestart ? "draining" : "shutting down")"), id: id, ack: nil)
        }
        outbound.end(closing: code, reason: reason, discardingQueued: false)
    }

    func isHello(_ message: ClientMessage) -> Bool {
        if case .hello = message { return true }
        return false
    }

    func handle(_ message: ClientMessage) {
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
            send(value, to: name, ack: ack)
        case .complete(let name, let ack):
            perform(ack: ack) { () throws(HubError) in
                try checkWritable(name, doing: "complete")
                let subject = try hub.openSubject(named: name)
                return { [hub] in hub.finish(subject, error: nil) }
            }
        case .fail(let name, let error, let ack):
            perform(ack: ack) { () throws(HubError) in
                try checkWritable(name, doing: "fail")
                let subject = try hub.openSubject(named: name)
                return { [hub] in hub.finish(subject, error: error) }
            }
        case .trigger(let name, let key, let ack):
            perform(ack: ack) { () throws(HubError) in
                try permit(.trigger, name, doing: "trigger")
                let trigger = try hub.trigger(named: name)
                return { [hub] in hub.activate(trigger, key: key) }
            }
        case .list(let ack, let after, let limit):
            let permissions = restrictedPermissions
            var catalog = hub.catalog(
                after: after, limit: limit ?? Catalog.maxPageEntries, maxBytes: Session.catalogPageBytes,
                isVisible: { name in permissions.map { Session.isVisible(name, to: $0) } ?? true })
            catalog.connections = service?.connectionCount
            outbound.send(.catalog(ack: ack, catalog))
        case .delete(let name, let ack):
            perform(ack: ack) { () throws(HubError) in
                try checkWritable(name, doing: "delete")
                guard case .subject = hub.entry(named: name) else {
                    _ = try hub.subject(named: name)  // the not_found that names what it is
                    throw HubError(.notFound, "no subject named '\(name)'")
                }
                return { [hub, logger] in
                    try? hub.delete(name)
                    logger.info("subject deleted", metadata: ["subject": "\(name)"])
                }
            }
        case .get(let name, let key, let ack):
            do throws(HubError) {
                try permit(.subscribe, name, doing: "read")
                let found = try hub.lookup(key, inTable: name)
                outbound.send(.entry(ack: ack, key: key, value: found?.value, offset: found?.offset))
            } catch {
                sendError(error, id: nil, ack: ack)
            }
        case .drain(let grace, let ack):
            perform(ack: ack) { () throws(HubError) in
                try checkAdmin("drain", "drain")
                guard let service else { throw HubError(.forbidden, "this server cannot be drained from a client") }
                return { [clientName, id] in
                    _ = service.drain(grace: grace, requestedBy: "client \(clientName ?? "?") (session \(id))")
                }
            }
        }
    }

    /// About how many bytes of JSON one page of the catalog holds (at least one entry):
    /// far below the largest message a client takes, whatever the catalog's size.
    static let catalogPageBytes = 1 << 20

    // MARK: Refusing

    func sendError(_ error: HubError, id: UInt64?, ack: Int64?) {
        switch error.code {
        case .badMessage, .unknownOp, .duplicateId, .invalidDemand:
            counters.protocolErrors += 1
            counters.emit("protocol_error", [
                "session": .string(self.id), "code": .string(error.code.rawValue), "message": .string(error.message),
            ])
            if outbound.mayLogProblem() {
                outbound.logger.notice(
                    "protocol error", metadata: ["code": "\(error.code)", "error": "\(error.message)"])
            }
        default:
            break
        }
        outbound.sendError(error, id: id, ack: ack)
    }
}
