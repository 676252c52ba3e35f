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
    /// Slows this connection down while a subject it sends to is congested.
    private let brake: PublisherBrake
    /// This connection's values waiting for the durable store: how many, and their bytes.
    private var storing = 0
    private var storingBytes = 0
    /// From this many values (or ``maxStoringBytes``) waiting for the store, the session
    /// stops reading the connection until half of them are stored.
    static let maxStoring = 4096
    static let maxStoringBytes = 8 << 20
    private let logger: Logger
    private var batchAll = false
    /// Where the client is in authenticating and being admitted (the bearer token, `hello`,
    /// the timers, the admission): the decisions, which this session carries out.
    private var auth: SessionAuthentication
    /// Who the client is, once authenticated (at once, as `anonymous`, on a server without auth).
    private var authentication: Authentication? { auth.authentication }
    private var authenticated: Bool { auth.isAuthenticated }
    /// Checks tokens; `nil` on a server without authentication.
    private let authenticator: Authenticator?
    /// The service's admission of connections (limits per service and identity), if any:
    /// set before ``start()``.
    weak var admission: Admission?
    private var authenticationTimer: (any Cancellable)?
    /// Ends the connection when its token expires (unless a `hello` refreshes it).
    private var expiryTimer: (any Cancellable)?
    /// The connection's inbound rate limits, if it has any.
    private var rateLimiter: InboundRateLimiter?
    /// The permissions checked, by name: a bit per operation allowed, and one per
    /// operation checked (so that a `send` stream matches its patterns once).
    private var permissionCache: [String: UInt16] = [:]
    /// What this connection's pipelines and buffers spend (with its identity's budget as
    /// parent, once admitted).
    private(set) var budget: ResourceBudget
    /// Whether the session has ended (connection closed, slow consumer, refusal, shutdown).
    public var isClosed: Bool { outbound.isClosed }
    /// The service loop's counters this session adds to.
    private let counters: ServiceCounters
    /// The service, for `list`'s connection count and the admin operations.
    weak var service: (any ServiceControl)?
    /// The client's name from `hello`, if it gave one (for logs and `$sys.connections`).
    public private(set) var clientName: String? {
        didSet { sender = Session.sender(id: id, clientName: clientName) }
    }
    /// Who sends this session's values, for the logs of what they cause: kept rather than
    /// built for every value sent.
    private var sender: String
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

    /// Carries out what the authentication's state machine decided, in order.
    private func carryOut(_ actions: [SessionAuthentication.Action]) {
        for action in actions {
            switch action {
            case .sendWelcome:
                outbound.send(.welcome(server: configuration.serverName, session: id))
            case .admit(let authentication):
                carryOut(admit(authentication))
            case .joinWaitingPool:
                if let displaced = admission?.wait(self) { displaced.displace() }
            case .leaveWaitingPool:
                admission?.stopWaiting(self)
            case .leaveAdmission(let identity):
                admission?.leave(identity: identity)
            case .startAuthenticationTimer:
                let deadline = hub.scheduler.now.advanced(by: configuration.authenticationTimeout)
                authenticationTimer = hub.scheduler.schedule(after: deadline) { [weak self] in
                    guard let self, !self.isClosed else { return }
                    self.carryOut(self.auth.authenticationTimedOut())
                }
            case .cancelAuthenticationTimer:
                authenticationTimer.take()?.cancel()
            case .watchExpiry(let expiresAt):
                watchExpiry(expiresAt)
            case .cancelExpiryTimer:
                expiryTimer.take()?.cancel()
            case .identify(let name):
                outbound.logger[metadataKey: "identity"] = "\(name)"
            case .clearPermissionCache:
                permissionCache.removeAll()
            case .refuse(let reason):
                refuseUnauthenticated(reason)
            case .refuseConnection(let error, let welcomed):
                counters.connectionRefusals += 1
                counters.emit("connection_refused", ["session": .string(id), "reason": .string(error.message)])
                outbound.logger.notice("connection refused", metadata: ["reason": "\(error.message)"])
                if welcomed { outbound.sendError(error, id: nil, ack: nil) }
                outbound.end(closing: .tooManyConnections, reason: "too many connections", discardingQueued: !welcomed)
            case .drop:
                counters.authFailures += 1
                outbound.logger.notice("dropped: too many connections waiting to authenticate")
                outbound.drop()
            }
        }
    }

    /// Asks the admission to count the connection as `authentication`'s identity; returns
    /// what the state machine makes of the verdict (a refusal when the service or the
    /// identity is at its limit).
    private func admit(_ authentication: Authentication) -> [SessionAuthentication.Action] {
        let identity = authentication.identity
        guard let admission else { return auth.admitted() }
        switch admission.admit(identity, budgeted: identity.hasOwnBudget) {
        case .admitted(let identityBudget):
            if let identityBudget {
                let scheduler = hub.scheduler
                budget = ResourceBudget(
                    owner: "this connection", limits: configuration.connectionBudget, parent: identityBudget,
                    clock: { scheduler.now })
            }
            return auth.admitted()
        case .refused(let error):
            return auth.admissionRefused(error)
        }
    }

    /// Ends the connection with 4401 at `expiresAt` (seconds since the epoch), unless a
    /// new `hello` moves it.
    private func watchExpiry(_ expiresAt: Double?) {
        expiryTimer.take()?.cancel()
        guard let expiresAt else { return }
        let left = max(0, expiresAt - Session.wallSeconds(hub))
        let deadline = hub.scheduler.now.advanced(by: .nanoseconds(Int64(min(left, 1e9) * 1e9)))
        expiryTimer = hub.scheduler.schedule(after: deadline) { [weak self] in
            guard let self, !self.isClosed else { return }
            self.carryOut(self.auth.tokenExpired())
        }
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

    /// The connection's outbound queue is empty: replays waiting for room read on.
    public func outboundDrained() {
        outbound.drained()
    }

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
    private func withinRate(bytes: Int) -> Bool {
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

    private func end(closing code: HubCloseCode, reason: String) {
        guard !isClosed else { return }
        carryOut(auth.ending())
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

    // MARK: Permissions

    /// The identity's permissions when they restrict anything (`nil`: everything is allowed,
    /// as for every client of a server without auth and for bare tokens).
    private var restrictedPermissions: Permissions? {
        guard let permissions = authentication?.identity.permissions, !permissions.isUnrestricted else { return nil }
        return permissions
    }

    /// Throws `forbidden` naming `name` unless the identity may do `operation` on it
    /// (decisions are cached per name for the session, so a stream of sends matches once).
    private func permit(_ operation: Permissions.Operation, _ name: String, doing: String) throws(HubError) {
        guard let permissions = restrictedPermissions else { return }
        let bit = UInt16(1) << UInt16(Permissions.Operation.allCases.firstIndex(of: operation)!)
        let known = permissionCache[name] ?? 0
        let allowed: Bool
        if known & (bit << 8) != 0 {
            allowed = known & bit != 0
        } else {
            allowed = permissions.allows(operation, name)
            if permissionCache.count >= 4096 { permissionCache.removeAll(keepingCapacity: true) }
            permissionCache[name] = known | (bit << 8) | (allowed ? bit : 0)
        }
        guard allowed else { throw Permissions.forbidden(operation, name, doing: doing) }
    }

    /// Whether this client may use the admin resource `name` (`drain`, a system subject
    /// `$sys.…`): the `admin` permission on that name.
    func mayAdminister(_ name: String) -> Bool {
        guard authenticated else { return false }
        return restrictedPermissions?.allows(.admin, name) ?? true
    }

    /// Refuses an admin operation on `name` to a client without the `admin` permission for it.
    private func checkAdmin(_ name: String, _ what: String) throws(HubError) {
        guard mayAdminister(name) else {
            throw HubError(
                .forbidden, "\(what) needs the admin permission for '\(name)'",
                data: ["name": .string(name), "permission": "admin"])
        }
    }

    /// Refuses `send`, `complete`, `fail` and `delete` on a system subject (only the
    /// broker writes them), and on a subject the identity may not publish into.
    private func checkWritable(_ name: String, doing: String) throws(HubError) {
        if HubName.isSystem(name) {
            throw HubError(.forbidden, "'\(name)' is a system subject: only the broker writes it")
        }
        try permit(.publish, name, doing: doing)
    }

    /// Whether `permissions` allow anything on `name` (a catalog shows only those names).
    static func isVisible(_ name: String, to permissions: Permissions) -> Bool {
        permissions.allows(.subscribe, name) || permissions.allows(.publish, name)
            || permissions.allows(.trigger, name) || permissions.allows(.admin, name)
    }

    /// About how many bytes of JSON one page of the catalog holds (at least one entry):
    /// far below the largest message a client takes, whatever the catalog's size.
    static let catalogPageBytes = 1 << 20

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

    /// `send`: the ack precedes the value's delivery. A subject with history stores the
    /// value first, so its ack (or the store's error) comes once it is stored
    /// (PROTOCOL.md §10), possibly after the acks of later requests to other subjects.
    private func send(_ value: Value, to name: String, ack: Int64?) {
        let subject: HubSubject
        let sender = self.sender
        do {
            try checkWritable(name, doing: "send to")
            subject = try hub.openSubject(named: name)
            try hub.validate(value, for: subject, sender: sender)
        } catch {
            sendError(error, id: nil, ack: ack)
            return
        }
        // A subject whose buffers are full slows its publishers down (`overflow: block`).
        defer { brake.hold(until: subject.congestion) }
        guard subject.history != nil else {
            if let ack { outbound.send(.ack(ack)) }
            hub.publish(value, to: subject, sender: sender)
            return
        }
        let bytes = value.estimatedBytes
        storing += 1
        storingBytes += bytes
        if storing >= Session.maxStoring || storingBytes >= Session.maxStoringBytes { brake.holdForStore() }
        hub.publish(value, to: subject, sender: sender) { [weak self] result in
            guard let self else { return }
            self.storing -= 1
            self.storingBytes -= bytes
            if self.brake.isHoldingForStore, self.storing <= Session.maxStoring / 2,
                self.storingBytes <= Session.maxStoringBytes / 2
            {
                self.brake.releaseStore()
            }
            switch result {
            case .success:
                if let ack { self.outbound.send(.ack(ack)) }
            case .failure(let error):
                self.sendError(error, id: nil, ack: ack)
            }
        }
    }

    /// Who a session sends as: its id, and the client's name from `hello` when it gave one.
    private static func sender(id: String, clientName: String?) -> String {
        guard let clientName else { return "session \(id)" }
        return "session \(id) (client \(Value.string(clientName).jsonString()))"
    }

    private func hello(token: String?, client: String?, batch: Bool) {
        if let client {
            clientName = String(client.prefix(128))
            outbound.logger[metadataKey: "client"] = "\(clientName!)"
        }
        if batch { batchAll = true }
        guard let authenticator else { return }
        // The first token, or a refresh: the same identity with a new token (a later
        // expiry, new permissions).
        var checked = SessionAuthentication.HelloToken.none
        if let token {
            do {
                checked = .accepted(try authenticator.authenticate(token, now: Session.wallSeconds(hub)), token: token)
            } catch {
                checked = .refused(error.message)
            }
        }
        carryOut(auth.hello(checked))
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
        // Whether its buffer slows the subject's publishers down (`overflow: block`): it
        // then takes values only as its connection drains.
        var blocks = false
        do throws(HubError) {
            switch request.target {
            case .name(let name):
                if HubName.isSystem(name) {
                    try checkAdmin(name, "subscribing to '\(name)'")
                    service?.refreshSystemSubjects()
                } else {
                    try permit(.subscribe, name, doing: "subscribe to")
                }
                if case .subject(let subject) = try hub.resolve(name), subject.history != nil {
                    try subscribe(id: id, to: subject, request)
                    return
                }
                let resolved = try hub.publisher(
                    for: name, bufferSize: request.buffer, overflow: request.overflow, memory: budget)
                switch resolved.entry {
                case .subject(let subject):
                    kind = .subject
                    blocks = subject.overflowPolicy(asked: request.overflow) == .block
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
                if let allowed = configuration.pipelineTokens, authentication?.identity == Authenticator.bareTokenIdentity,
                   !(auth.token.map(allowed.contains) ?? false) {
                    throw HubError(.forbidden, "this client's token may not subscribe to ad-hoc pipelines")
                }
                let permissions = restrictedPermissions
                if let permissions, !permissions.allowsAny(.pipelines) {
                    throw HubError(
                        .forbidden, "not allowed to send ad-hoc pipelines (no pipelines permission)",
                        data: ["permission": "pipelines"])
                }
                publisher = try hub.compile(
                    pipeline: source, bufferSize: request.buffer, overflow: request.overflow, budget: budget,
                    permissions: permissions)
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
            counters: counters, pipeline: pipeline, origin: hub.origin, paced: blocks)
        subscriptions.insert(remote)
        // A `since` on a name without history: the subscription goes on live from now.
        outbound.send(.subscribed(id: id, kind: kind, recovered: request.since == nil ? nil : false))
        remote.grant(Subscribers.Demand(request.demand))
        publisher.subscribe(remote)
    }

    /// A subscription to a subject with history: its values carry their offsets, and
    /// `subscribed` (with the epoch, the latest offset and, for a `since`, whether it was
    /// recovered) goes out once the replay knows where it starts, which for a durable
    /// subject may be after a read of the store. Meanwhile the id is live: `request`
    /// adds demand and `cancel` ends it (then no `subscribed` is sent).
    private func subscribe(id: UInt64, to subject: HubSubject, _ request: SubscribeRequest) throws(HubError) {
        let remote = RemoteSubscriber(
            id: id, batch: request.batch ?? batchAll, outbound: outbound, subscriptions: subscriptions,
            counters: subject.counters, paced: subject.overflowPolicy(asked: request.overflow) == .block)
        let publisher = try hub.historyPublisher(
            for: subject, since: request.since, bufferSize: request.buffer, overflow: request.overflow,
            memory: budget, pacer: outbound
        ) { [outbound, subscriptions] position, recovered in
            guard subscriptions[id] === remote else { return }
            outbound.send(.subscribed(id: id, kind: .subject, history: position, recovered: recovered))
        }
        subscriptions.insert(remote)
        remote.grant(Subscribers.Demand(request.demand))
        publisher.subscribe(OffsetSubscriber(remote))
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
            if outbound.mayLogProblem() {
                outbound.logger.notice(
                    "protocol error", metadata: ["code": "\(error.code)", "error": "\(error.message)"])
            }
        default:
            break
        }
        outbound.sendError(error, id: id, ack: ack)
    }

    /// Drops a connection that has waited longest to authenticate, for a newcomer (the
    /// pool of waiting connections is full): at once, without a close handshake, so that
    /// a flood of tokenless sockets cannot hold slots.
    func displace() {
        guard !isClosed else { return }
        carryOut(auth.displaced())
    }

    /// Sends `unauthorized` with `reason` and closes with 4401 (after what is queued).
    private func refuseUnauthenticated(_ reason: String) {
        guard !isClosed else { return }
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
