import HubTransport

/// The plain HTTP endpoints of a ``HubService``, served beside WebSocket on its port
/// (and on the admin listener when one is configured):
///
/// | path | answer |
/// |---|---|
/// | `GET /health` | `200 ok`: the process is alive and its loop answers |
/// | `GET /ready` | `200 ready` while serving; `503` with the reason while starting, draining or stopping, or while a readiness check fails |
/// | anything else | `404` |
///
/// With an admin listener, the main port keeps only `/health` and `/ready` (load
/// balancers probe the port they send traffic to); everything else is on the admin one.
struct ServiceRoutes {
    /// Which listener a request came in on.
    enum Listener {
        /// The WebSocket port (everything when no admin listener is configured).
        case main
        /// The separate admin listener.
        case admin
    }

    /// Answers `exchange`, which arrived on `listener`; `adminSplit` says whether an admin
    /// listener is configured.
    static func handle(_ exchange: HTTPExchange, on listener: Listener, adminSplit: Bool, core: ServiceCore) {
        let request = exchange.request
        switch request.path {
        case "/health":
            exchange.respond(plain(200, "ok"))
        case "/ready":
            if let reason = core.notReadyReason {
                exchange.respond(plain(503, "not ready: \(reason)"))
            } else {
                exchange.respond(plain(200, "ready"))
            }
        default:
            if listener == .main && adminSplit {
                exchange.respond(.notFound(request.path))
                return
            }
            exchange.respond(.notFound(request.path))
        }
    }

    /// A `text/plain` response of one line that is never cached.
    static func plain(_ status: Int, _ line: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [.init("cache-control", "no-store")], text: line + "\n")
    }
}
