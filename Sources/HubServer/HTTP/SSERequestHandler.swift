import HubRegistry
import HubTransport
import HubValue
import HubWire
import Logging

/// Serves one event stream request (`GET …/events`) with a ``Session`` of its own,
/// which subscribes once with unlimited demand (or `?demand=N`) from the position the
/// request resumes at (``SSESubscription``), and writes its values as Server-Sent Events
/// (``SSEStream``). The session is authenticated by the request's bearer token and
/// admitted like a WebSocket connection, so a stream counts toward `maxConnections`
/// for as long as it lasts; its subscription's buffer, overflow policy and the
/// slow-consumer bound are the protocol's.
///
/// The service keeps it with its connections while the stream lasts (``SessionLink``):
/// it is opened, logged and counted as one (`connect`, `disconnect`, `$sys.connections`),
/// and a drain or a stop ends it with `event: error` (`shutting_down`).
///
/// Confined to the hub's loop; it lives until the stream ends (its session's connection
/// holds it, and the service while it is open).
final class SSERequestHandler: SessionLink {
    private let request: HTTPRequest
    private let reply: HTTPReply
    private unowned let core: ServiceCore
    private(set) var session: Session?
    private var stream: SSEStream?
    private var answered = false
    private var sessions: SessionFactory?
    private var logger: Logger?
    let openedAt = Hub.systemWallClock().nanoseconds

    private init(request: HTTPRequest, reply: HTTPReply, core: ServiceCore) {
        self.request = request
        self.reply = reply
        self.core = core
    }

    /// Serves `request`, a stream of `target`, with a session of `core`'s.
    static func serve(_ target: APIRoute.EventsTarget, _ request: HTTPRequest, core: ServiceCore, reply: HTTPReply) {
        SSERequestHandler(request: request, reply: reply, core: core).start(target, core.sessionFactory)
    }

    // MARK: SessionLink

    var peer: String? { request.peer }
    var bytesReceived: Int { request.body.count }
    var bytesSent: Int { stream?.bytesWritten ?? 0 }
    var writeCalls: Int { stream?.eventsWritten ?? 0 }
    var messagesWritten: Int { stream?.eventsWritten ?? 0 }
    var queuedBytes: Int { stream?.queuedBytes ?? 0 }

    // MARK: Serving

    private func start(_ target: APIRoute.EventsTarget, _ sessions: SessionFactory) {
        guard core.adoptStream(self) else {
            refuse(HubError(.shuttingDown, "the server is \(core.isDraining ? "draining" : "shutting down")"))
            return
        }
        let authorization = Self.credentials(of: request)
        if sessions.authenticator != nil || sessions.configuration.requiresAuthentication,
           Session.bearerToken(authorization) == nil
        {
            refuse(HubError(
                .unauthorized,
                "this server requires a token: send Authorization: Bearer TOKEN, ?token=TOKEN or a \(Self.tokenCookie) cookie"))
            return
        }
        let message: ClientMessage
        let demand: Int64?
        do throws(HubError) {
            var fields = try SSESubscription.fields(of: request)
            demand = fields["demand"].flatMap { if case .int(let n) = $0 { n } else { nil } }
            switch target {
            case .subject(let name), .pipeline(let name), .trigger(let name):
                try Self.check(target, sessions.hub)
                fields["to"] = .string(name)
            case .adHoc:
                guard let text = request.queryValue("pipeline"), !text.isEmpty else {
                    throw HubError(.badMessage, "a 'pipeline' parameter with the pipeline's text is required")
                }
                fields["pipeline"] = .string(text)
            }
            do {
                message = try ClientMessage.decode(value: .object(fields))
            } catch {
                throw error.error
            }
        } catch {
            refuse(error)
            return
        }
        let stream = SSEStream(channel: reply.stream(), demand: demand)
        self.stream = stream
        stream.keepAlive(every: .seconds(Int64(max(1, core.configuration.pingInterval))), on: sessions.hub.scheduler)
        let (session, logger) = sessions.open(
            on: stream, authorization: authorization, peer: request.peer, path: request.path)
        self.session = session
        self.sessions = sessions
        self.logger = logger
        stream.onRefusal = { [self] error in refuse(error) }
        stream.onEnd = { [self] in ended() }
        session.start()
        guard !answered else { return }
        guard session.isAuthenticated, !session.isClosed else {
            refuse(HubError(.unauthorized, "the token is not accepted"))
            return
        }
        session.receive(message, bytes: request.path.utf8.count)
    }

    /// The request's credentials: its `Authorization` header, else its `token` query
    /// parameter, else its ``tokenCookie`` cookie, as a bearer token: an `EventSource`
    /// cannot set headers. The token goes no further than the session's authentication:
    /// a session logs the request's path, which has no query, and its identity, never its
    /// token. Only event streams take the query parameter and the cookie: they change
    /// nothing, so a page of another site that makes a browser send the cookie along can
    /// make the broker read for it, and what it reads stays out of that page's reach
    /// unless CORS lets it in.
    static func credentials(of request: HTTPRequest) -> String? {
        if let authorization = request.authorization { return authorization }
        if let token = request.queryValue("token"), !token.isEmpty { return "Bearer " + token }
        return request.cookie(tokenCookie).map { "Bearer " + $0 }
    }

    /// The cookie that may carry an event stream's token: its value is the token as is
    /// (a JWT's characters are all allowed in a cookie).
    static let tokenCookie = "hub_token"

    /// A name under `/v1/pipelines/` or `/v1/triggers/` must be one (a subject's name
    /// is `not_found` there); under `/v1/subjects/`, a pipeline or a trigger is not a subject.
    private static func check(_ target: APIRoute.EventsTarget, _ hub: Hub) throws(HubError) {
        switch target {
        case .subject(let name):
            switch hub.entry(named: name) {
            case .pipeline?, .trigger?: throw HubError(.notFound, "'\(name)' is not a subject: see /v1/pipelines/ or /v1/triggers/")
            default: break
            }
        case .pipeline(let name):
            guard case .pipeline? = hub.entry(named: name) else { throw HubError(.notFound, "no pipeline named '\(name)'") }
        case .trigger(let name):
            if case .trigger? = hub.entry(named: name) { return }
            if hub.entry(named: name) != nil || !hub.configuration.autoCreate {
                throw HubError(.notFound, "no trigger named '\(name)'")
            }
        case .adHoc:
            break
        }
    }

    /// Answers with `error` before the stream began, and lets the session go.
    private func refuse(_ error: HubError) {
        guard !answered else { return }
        answered = true
        reply.respond(APIErrorStatus.response(for: error))
        ended()
    }

    /// The stream ended (or never began): the session ends after the current step (the
    /// admission gets its place back), and the service forgets the stream.
    private func ended() {
        answered = true
        stream?.onEnd = nil
        stream?.onRefusal = nil
        guard let session = session.take(), let sessions, let logger else {
            core.forget(self)
            return
        }
        // Not inside the step that ended it (a value being delivered): next.
        session.hub.scheduler.schedule { [self] in
            sessions.close(
                session, logger: logger, openedAt: openedAt, code: nil, reason: "event stream ended", peer: peer,
                bytesReceived: bytesReceived, bytesSent: bytesSent)
            stream = nil
            core.forget(self)
        }
    }
}
