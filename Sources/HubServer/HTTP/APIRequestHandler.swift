import HubRegistry
import HubTransport
import HubValue
import HubWire

/// Serves one HTTP API request with a ``Session`` of its own, so that it follows the
/// WebSocket rules by construction: the request's `Authorization: Bearer` token
/// authenticates the session and the admission counts it while it lasts; the request
/// becomes the protocol's messages (a `send` with an `ack` for each value, a `delete`,
/// a `list`, ...), which the session checks (rate limits, permissions, names, schemas)
/// and runs; its `ack`, `error` or `catalog` becomes the HTTP answer
/// (``APIErrorStatus`` for errors). A publish to a subject with history is answered
/// once its last value is stored, with that value's offset and the epoch. While the
/// session would stop reading a WebSocket publisher (a congested `overflow: block`
/// subject, values waiting for the store), the next value waits, and so does the
/// answer: an HTTP publisher is slowed down as a WebSocket one is.
///
/// Confined to the hub's loop; it lives until it has answered (its session's connection
/// holds it).
final class APIRequestHandler {
    private let route: APIRoute
    private let request: HTTPRequest
    private var respond: ((HTTPResponse) -> Void)?
    private let connection = APISessionConnection()
    private var session: Session?
    /// The `ack` whose arrival answers the request (a publish's last value's).
    private var finalAck: Int64 = 1
    /// A publish's values, and how many were sent.
    private var values: [Value] = []
    private var sent = 0
    /// Whether values are being handed to the session now (an answer waits for the end).
    private var sending = false
    /// The answer that came while ``sending``.
    private var heldAnswer: HTTPResponse?

    private init(route: APIRoute, request: HTTPRequest, respond: @escaping (HTTPResponse) -> Void) {
        self.route = route
        self.request = request
        self.respond = respond
    }

    /// Serves `request` (of `route`) with a session `sessions` makes; `respond` gets the
    /// answer once, now or later on the hub's loop.
    static func serve(
        _ route: APIRoute, _ request: HTTPRequest, sessions: SessionFactory, rateLimits: HTTPRateLimits,
        respond: @escaping (HTTPResponse) -> Void
    ) {
        let handler = APIRequestHandler(route: route, request: request, respond: respond)
        handler.rateLimits = rateLimits
        handler.start(sessions)
    }

    /// The client's limiters, kept across its requests.
    private var rateLimits: HTTPRateLimits?

    /// Runs `body` (which hands the session messages) with the client's limiter kept
    /// across requests in place of the session's own.
    private func rateLimited<T>(_ session: Session, _ body: () -> T) -> T {
        guard let rateLimits, let own = session.rateLimiter else { return body() }
        let key = session.authenticator == nil ? "peer \(request.peer ?? "?")" : "identity \(session.identity?.name ?? "?")"
        let now = session.hub.scheduler.now.nanoseconds
        session.rateLimiter = rateLimits.limiter(for: key, limits: own.limits, now: now)
        let result = body()
        if let used = session.rateLimiter { rateLimits.keep(used, for: key, now: now) }
        return result
    }

    private func start(_ sessions: SessionFactory) {
        // Over HTTP there is no `hello` to wait for: a server with authentication wants
        // the token with the request.
        if sessions.authenticator != nil || sessions.configuration.requiresAuthentication,
           Session.bearerToken(request.authorization) == nil
        {
            finish(APIErrorStatus.response(for: HubError(
                .unauthorized, "this server requires a token: send Authorization: Bearer TOKEN")))
            return
        }
        let session = sessions.openRequest(on: connection, authorization: request.authorization, peer: request.peer)
        self.session = session
        connection.onMessage = { [self] message in heard(message) }
        connection.onClose = { [self] code in closed(code) }
        session.start()
        guard respond != nil else { return }
        guard session.isAuthenticated, !session.isClosed else {
            finish(APIErrorStatus.response(for: HubError(.unauthorized, "the token is not accepted")))
            return
        }
        do throws(HubError) {
            try perform(route, on: session)
        } catch {
            finish(APIErrorStatus.response(for: error))
        }
    }

    // MARK: Operations

    private func perform(_ route: APIRoute, on session: Session) throws(HubError) {
        switch route {
        case .publish(let name):
            try publish(to: name, on: session)
        case .complete(let name):
            send(["op": "complete", "to": .string(name), "ack": 1], on: session)
        case .fail(let name):
            send(["op": "fail", "to": .string(name), "error": try APIBody.value(try jsonBody()), "ack": 1], on: session)
        case .delete(let name):
            send(["op": "delete", "name": .string(name), "ack": 1], on: session)
        case .trigger(let name):
            var message: Value.Object = ["op": "trigger", "name": .string(name), "ack": 1]
            let body = try jsonBody()
            if body.contains(where: { $0 > 32 }) { message["key"] = try APIBody.value(body) }
            send(message, on: session)
        case .catalog:
            var message: Value.Object = ["op": "list", "ack": 1]
            if let after = request.queryValue("after") { message["after"] = .string(after) }
            if let text = request.queryValue("limit") {
                guard let limit = Int64(text) else {
                    throw HubError(.badMessage, "'limit' must be an integer from 1 to \(Catalog.maxPageEntries)")
                }
                message["limit"] = .int(limit)
            }
            send(message, on: session)
        case .events, .openAPI:
            // Served as a stream (SSERequestHandler), or the document (ServiceRoutes), never here.
            throw HubError(.internal, "not an operation of a session")
        case .latest(let name):
            guard rateLimited(session, { session.withinRate(bytes: 0) }) else { return }
            guard let latest = try session.latestValue(of: name) else {
                throw HubError(.notFound, "subject '\(name)' has no value")
            }
            finish(latestResponse(latest))
        }
    }

    /// `send`s the body's value, or each of its NDJSON values once all are checked.
    private func publish(to name: String, on session: Session) throws(HubError) {
        guard let kind = APIBody.kind(of: request) else {
            finish(APIErrorStatus.unsupportedMediaType(request.header("content-type") ?? ""))
            return
        }
        values = kind == .json ? [try APIBody.value(request.body)] : try APIBody.values(request.body)
        // Every value is checked before any is sent: a refusal sends nothing.
        if values.count > 1 { try session.checkSending(values, to: name) }
        finalAck = Int64(values.count)
        sendValues(to: name, on: session)
    }

    /// Sends the values not sent yet, in order, pausing while the session does not read.
    private func sendValues(to name: String, on session: Session) {
        sending = true
        while sent < values.count, respond != nil {
            if connection.isPaused {
                connection.onResume = { [self] in sendValues(to: name, on: session) }
                break
            }
            let value = values[sent]
            sent += 1
            send(["op": "send", "to": .string(name), "value": value, "ack": .int(Int64(sent))], on: session)
        }
        sending = false
        if let answer = heldAnswer.take() { answerWhenReading(answer) }
    }

    /// Answers once the session reads on (at once when it does).
    private func answerWhenReading(_ response: HTTPResponse) {
        if sending {
            heldAnswer = response
        } else if connection.isPaused {
            connection.onResume = { [self] in finish(response) }
        } else {
            finish(response)
        }
    }

    /// Hands `fields`, a protocol message, to the session as if a client had sent it.
    private func send(_ fields: Value.Object, on session: Session) {
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(value: .object(fields))
        } catch {
            finish(APIErrorStatus.response(for: error.error))
            return
        }
        rateLimited(session) { session.receive(message, bytes: fields["value"]?.estimatedBytes ?? request.body.count) }
    }

    /// The body of an operation that reads JSON (a fail's error, a trigger's key).
    private func jsonBody() throws(HubError) -> [UInt8] {
        guard APIBody.kind(of: request) == .json else {
            throw HubError(.badMessage, "this body is one JSON value: send it as application/json")
        }
        return request.body
    }

    /// `200` with the latest value, its offset in the `ETag` for a subject with history
    /// (`304` when the request's `If-None-Match` names it).
    private func latestResponse(_ latest: (value: Value, offset: UInt64?, epoch: String?)) -> HTTPResponse {
        guard let offset = latest.offset, let epoch = latest.epoch else { return APIResponse.json(200, latest.value) }
        let tag = "\"\(offset)@\(epoch)\""
        if let wanted = request.header("if-none-match"), wanted.split(separator: ",").contains(where: {
            $0.filter { $0 != " " } == tag || $0.filter { $0 != " " } == "*"
        }) {
            return HTTPResponse(status: 304, contentType: "application/json", headers: [.init("etag", tag)], body: [])
        }
        return APIResponse.json(200, latest.value, headers: [.init("etag", tag)])
    }

    // MARK: The session's answers

    private func heard(_ message: Value) {
        guard case .object(let fields) = message, case .string(let op)? = fields["op"] else { return }
        switch op {
        case "error":
            guard case .string(let code)? = fields["code"], case .string(let text)? = fields["message"] else { return }
            let error = HubError(HubError.Code(rawValue: code) ?? .internal, text, data: fields["data"])
            finish(APIErrorStatus.response(for: error))
        case "ack":
            guard fields["ack"] == .int(finalAck) else { return }
            answerWhenReading(APIResponse.json(200, acknowledgement()))
        case "catalog":
            var catalog = fields
            catalog["op"] = nil
            catalog["ack"] = nil
            finish(APIResponse.json(200, .object(catalog)))
        default:
            break
        }
    }

    /// A publish's answer: the last value's offset and the epoch for a subject with
    /// history, else nothing to say.
    private func acknowledgement() -> Value {
        guard case .publish(let name) = route, let session, let offset = session.lastStoredOffset,
              case .subject(let subject)? = session.hub.entry(named: name), let history = subject.history
        else { return .object([:]) }
        return .object(["offset": .int(Int64(offset)), "epoch": .string(history.epoch)])
    }

    private func closed(_ code: HubCloseCode) {
        guard respond != nil else { return }
        let error = code == .tooManyConnections
            ? HubError(.limitExceeded, "the server is at its connection limit", data: ["limit": "maxConnections"])
            : HubError(.shuttingDown, "the request's session ended (close code \(code.rawValue))")
        finish(APIErrorStatus.response(for: error))
    }

    /// Answers (once) and ends the session: the admission gets its place back.
    private func finish(_ response: HTTPResponse) {
        guard let respond else { return }
        self.respond = nil
        respond(response)
        connection.detach()
        session.take()?.connectionClosed()
    }
}
