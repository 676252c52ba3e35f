import HubTransport

/// The plain HTTP endpoints of a ``HubService``, served beside WebSocket on its port
/// (and on the admin listener when one is configured):
///
/// | path | answer |
/// |---|---|
/// | `GET /health` | `200 ok`: the process is alive and its loop answers |
/// | `GET /ready` | `200 ready` while serving; `503` with the reason while starting, draining or stopping, or while a readiness check fails |
/// | `GET /metrics` | Prometheus text (with auth: an accepted `Authorization: Bearer` token, else `401`) |
/// | `GET /dashboard/` | the dashboard (static files inside the binary; its data comes over WebSocket, through the same auth) |
/// | `GET /client/hub.js` | the JS client (clients/js/hub.js, inside the binary), for `import { Hub } from "/client/hub.js"`; any origin may load it |
/// | `GET /` | `302` to `/dashboard/` (a WebSocket upgrade on `/` is the protocol) |
/// | `/v1/...` | the HTTP API (``APIRoute``, served by ``APIRequestHandler``), on every listener |
/// | anything else | `404` |
///
/// With an admin listener, the main port keeps only `/health`, `/ready` (load
/// balancers probe the port they send traffic to) and `/client/hub.js` (the client of
/// that port); everything else is on the admin one.
struct ServiceRoutes {
    /// Which listener a request came in on.
    enum Listener {
        /// The WebSocket port (everything when no admin listener is configured).
        case main
        /// The separate admin listener.
        case admin
    }

    /// Answers `request`, which arrived on `listener`, through `reply` (once);
    /// `adminSplit` says whether an admin listener is configured.
    static func handle(
        _ request: HTTPRequest, on listener: Listener, adminSplit: Bool, core: ServiceCore, reply: HTTPReply
    ) {
        let policy = core.configuration.crossOrigin
        if request.path.hasPrefix("/v1/"), CrossOriginPolicy.isPreflight(request) {
            reply.respond(policy.preflight(request))
            return
        }
        let apiReply = policy.decorate(reply, for: request)
        let answer = apiReply.respond
        switch APIRoute.match(method: request.method, path: request.path) {
        case .route(.openAPI):
            answer(openAPIDocument())
            return
        case .route(.events(let target)):
            SSERequestHandler.serve(target, request, core: core, reply: apiReply)
            return
        case .route(let route):
            APIRequestHandler.serve(
                route, request, sessions: core.sessionFactory, rateLimits: core.httpRateLimits, respond: answer)
            return
        case .notFound:
            answer(APIResponse.notFound(request.path))
            return
        case .methodNotAllowed(let allowed):
            answer(APIErrorStatus.methodNotAllowed(request.method, allowed: allowed))
            return
        case .notAPI:
            break
        }
        let respond = reply.respond
        switch request.path {
        case "/health":
            respond(plain(200, "ok"))
        case "/ready":
            if let reason = core.notReadyReason {
                respond(plain(503, "not ready: \(reason)"))
            } else {
                respond(plain(200, "ready"))
            }
        case "/client/hub.js":
            respond(clientScript())
        default:
            if listener == .main && adminSplit {
                respond(.notFound(request.path))
                return
            }
            operatorRoute(request, core: core, respond: respond)
        }
    }

    /// The paths for operators (the admin listener's, or the main port's without one).
    private static func operatorRoute(_ request: HTTPRequest, core: ServiceCore, respond: (HTTPResponse) -> Void) {
        switch request.path {
        case "/metrics":
            guard core.mayAdminister(request) else {
                respond(unauthorized())
                return
            }
            let body = core.exporter.render(core.snapshot(for: .metrics), adding: core.metricsSources.flatMap { $0() })
            respond(HTTPResponse(
                status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                headers: [.init("cache-control", "no-store")], body: body))
        case "/":
            respond(HTTPResponse(status: 302, headers: [.init("location", "/dashboard/")], text: "/dashboard/\n"))
        case "/dashboard":
            respond(HTTPResponse(status: 301, headers: [.init("location", "/dashboard/")], text: "/dashboard/\n"))
        default:
            guard request.path.hasPrefix("/dashboard/") else {
                respond(.notFound(request.path))
                return
            }
            var file = String(request.path.dropFirst("/dashboard/".count))
            if file.isEmpty { file = "index.html" }
            guard let asset = DashboardAssets.files[file] else {
                respond(.notFound(request.path))
                return
            }
            respond(HTTPResponse(
                status: 200, contentType: asset.contentType,
                headers: [
                    .init("cache-control", "no-cache"),
                    .init("content-security-policy", "default-src 'self'; connect-src 'self' ws: wss:; style-src 'self'"),
                    .init("x-content-type-options", "nosniff"),
                ],
                text: asset.text))
        }
    }

    /// The HTTP API's OpenAPI document (Protocol/openapi.json, inside the binary).
    static func openAPIDocument() -> HTTPResponse {
        HTTPResponse(
            status: 200, contentType: "application/json",
            headers: [.init("cache-control", "no-cache"), .init("x-content-type-options", "nosniff")],
            body: PackageResources.openapi_json)
    }

    /// The JS client as an ES module. Pages of other origins may import it too (a module
    /// script is fetched with CORS): it is public code, and what it connects to is
    /// guarded by the WebSocket's own auth.
    static func clientScript() -> HTTPResponse {
        guard let client = DashboardAssets.files["hub.js"] else { return .notFound("/client/hub.js") }
        return HTTPResponse(
            status: 200, contentType: client.contentType,
            headers: [
                .init("cache-control", "no-cache"),
                .init("access-control-allow-origin", "*"),
                .init("x-content-type-options", "nosniff"),
            ],
            text: client.text)
    }

    /// `401` asking for a bearer token.
    static func unauthorized() -> HTTPResponse {
        HTTPResponse(
            status: 401, headers: [.init("www-authenticate", "Bearer realm=\"hub\""), .init("cache-control", "no-store")],
            text: "unauthorized: send an accepted token as Authorization: Bearer TOKEN\n")
    }

    /// A `text/plain` response of one line that is never cached.
    static func plain(_ status: Int, _ line: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [.init("cache-control", "no-store")], text: line + "\n")
    }
}
