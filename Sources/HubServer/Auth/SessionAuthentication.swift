import HubWire

/// Where one connection is in proving who it is and being admitted: the bearer token of
/// the upgrade request, the `hello` that carries (or refreshes) a token, the clock for the
/// first token, the token's expiry and the service's admission (PROTOCOL.md §2).
///
/// A state machine without side effects: each input (`mutating`) returns the actions the
/// ``Session`` carries out in order (send `welcome`, ask the ``Admission``, start or cancel
/// a timer, refuse the connection), so that every transition is tested without a socket.
/// The admission itself answers outside: ``Action/admit(_:)`` asks for its verdict, which
/// comes back through ``admitted()`` or ``admissionRefused(_:)``.
struct SessionAuthentication {
    /// What the upgrade request's `Authorization: Bearer` header gave.
    enum Bearer: Equatable {
        /// No bearer token.
        case none
        /// A token the authenticator accepted, and whom it authenticates.
        case accepted(Authentication, token: String)
        /// A token the authenticator refused, and why.
        case refused(String)
    }

    /// The token a `hello` carried, once checked.
    enum HelloToken: Equatable {
        /// The `hello` carries no token.
        case none
        /// A token the authenticator accepted, and whom it authenticates.
        case accepted(Authentication, token: String)
        /// A token the authenticator refused, and why.
        case refused(String)
    }

    /// A message from the client, as far as authentication cares.
    enum Inbound: Equatable {
        /// A `hello`.
        case hello
        /// Any other client message.
        case message
        /// Text that is not a client message, with the decoder's complaint.
        case undecodable(String)
        /// A binary message.
        case binary
    }

    /// What the session does, in order.
    enum Action: Equatable {
        /// Send `welcome`.
        case sendWelcome
        /// Count the connection in the admission as this authentication's identity, then
        /// report the verdict with ``admitted()`` or ``admissionRefused(_:)``.
        case admit(Authentication)
        /// Wait in the admission's pool of connections that have not authenticated (and
        /// drop the connection it displaces, if any).
        case joinWaitingPool
        /// Leave the pool of connections waiting to authenticate.
        case leaveWaitingPool
        /// Give back the identity's place in the admission.
        case leaveAdmission(identity: String)
        /// Start the clock for the first token.
        case startAuthenticationTimer
        /// Stop the clock for the first token.
        case cancelAuthenticationTimer
        /// Replace the expiry timer: end the connection at this time (seconds since the
        /// epoch), or, for `nil`, never.
        case watchExpiry(at: Double?)
        /// Stop the expiry timer.
        case cancelExpiryTimer
        /// Name the identity in the connection's log lines.
        case identify(String)
        /// Forget the permission decisions cached for the previous token.
        case clearPermissionCache
        /// Send `unauthorized` with this reason and close with 4401 (after what is queued).
        case refuse(String)
        /// The admission refused the connection: close with 4429; `welcomed`: the client
        /// had its `welcome` and gets this error before the close, otherwise nothing is sent.
        case refuseConnection(HubError, welcomed: Bool)
        /// Drop the connection at once, without a close handshake (displaced from the pool).
        case drop
    }

    /// Where the connection is.
    enum Phase: Equatable {
        /// Before ``start()``.
        case new
        /// `welcome` sent; waiting for a `hello` with a token.
        case awaitingHello
        /// Waiting for the admission's verdict on this authentication (`welcomed`: whether
        /// `welcome` went out already, as it does when authentication is required).
        case admitting(Authentication, token: String?, welcomed: Bool)
        /// Authenticated and admitted.
        case open
        /// The session is ending the connection (refused, dropped, shutting down).
        case ending
        /// The connection closed.
        case closed
    }

    /// Whether clients must authenticate (otherwise every client is `anonymous`).
    let requiresAuthentication: Bool
    /// How long a client has for its first token (for the refusal's reason).
    let authenticationTimeout: Duration
    /// Where the connection is.
    private(set) var phase = Phase.new
    /// Who the client is, once authenticated and admitted (kept after the connection ends).
    private(set) var authentication: Authentication?
    /// The token the client authenticated with, if any.
    private(set) var token: String?
    /// Whether the connection waits in the admission's pool.
    private(set) var isWaitingInPool = false
    /// The identity the admission counts this connection as, if it does.
    private(set) var admittedIdentity: String?
    /// Whether the clock for the first token runs.
    private(set) var authenticationTimerRuns = false
    /// Whether the expiry timer runs.
    private(set) var expiryTimerRuns = false
    private var bearer: Bearer

    /// The machine of a new connection. `requiresAuthentication`: whether the server checks
    /// tokens; `bearer`: what the upgrade request's bearer token gave.
    init(requiresAuthentication: Bool, bearer: Bearer = .none, authenticationTimeout: Duration = .seconds(5)) {
        self.requiresAuthentication = requiresAuthentication
        self.bearer = requiresAuthentication ? bearer : .none
        self.authenticationTimeout = authenticationTimeout
    }

    /// Whether the client is authenticated (always, once admitted, on a server without auth).
    var isAuthenticated: Bool { authentication != nil }

    /// The connection starts: `welcome` and, when authentication is required and not yet
    /// given, the clock for `hello` (or, after a wrong bearer token, a refusal at once).
    /// Without authentication the client is `anonymous`, admitted before anything is sent.
    mutating func start() -> [Action] {
        guard phase == .new else { return [] }
        guard requiresAuthentication else {
            let anonymous = Authentication(identity: .anonymous)
            phase = .admitting(anonymous, token: nil, welcomed: false)
            return [.admit(anonymous)]
        }
        switch bearer {
        case .refused(let reason):
            // A wrong token is refused at once (PROTOCOL.md §2), wherever it came from.
            return [.sendWelcome] + refuse(reason)
        case .accepted(let authentication, let token):
            bearer = .none
            return [.sendWelcome] + establish(authentication, token: token)
        case .none:
            // Waiting for a hello: in the pool of unauthenticated connections (not counted
            // in maxConnections), which displaces the longest waiting one when full.
            phase = .awaitingHello
            isWaitingInPool = true
            authenticationTimerRuns = true
            return [.sendWelcome, .joinWaitingPool, .startAuthenticationTimer]
        }
    }

    /// The admission counted the connection.
    mutating func admitted() -> [Action] {
        guard case .admitting(let authentication, let token, let welcomed) = phase else { return [] }
        phase = .open
        self.authentication = authentication
        self.token = token
        admittedIdentity = authentication.identity.name
        guard welcomed else { return [.sendWelcome] }
        expiryTimerRuns = authentication.expiresAt != nil
        return [.identify(authentication.identity.name), .watchExpiry(at: authentication.expiresAt)]
    }

    /// The admission refused the connection (the service or the identity is at its limit).
    mutating func admissionRefused(_ error: HubError) -> [Action] {
        guard case .admitting(_, _, let welcomed) = phase else { return [] }
        phase = .ending
        return [.refuseConnection(error, welcomed: welcomed)]
    }

    /// A message arrived: returns `nil` when the session handles it, otherwise the refusal
    /// (before authentication, anything but a valid `hello` is refused: PROTOCOL.md §2).
    /// Once the connection ends, nothing more is handled.
    mutating func received(_ inbound: Inbound) -> [Action]? {
        guard phase != .ending, phase != .closed else { return [] }
        guard !isAuthenticated else { return nil }
        switch inbound {
        case .hello:
            return nil
        case .message, .binary:
            return refuse("authenticate with a hello carrying a token first")
        case .undecodable(let complaint):
            return refuse("authenticate with a hello carrying a token first (\(complaint))")
        }
    }

    /// A `hello` with `token`: the first authentication, or a refresh of the same identity
    /// (a later expiry, new permissions). Without authentication it changes nothing here.
    mutating func hello(_ token: HelloToken) -> [Action] {
        guard requiresAuthentication, phase != .ending, phase != .closed else { return [] }
        switch token {
        case .none:
            // A hello without a token after authentication only sets client and batch.
            return isAuthenticated ? [] : refuse("hello carries no token")
        case .refused(let reason):
            return refuse(reason)
        case .accepted(let fresh, let token):
            guard let current = authentication else {
                if case .admitting = phase { return [] }
                return establish(fresh, token: token)
            }
            guard fresh.identity.name == current.identity.name else {
                return refuse(
                    "a new hello must authenticate the same identity ('\(current.identity.name)', not '\(fresh.identity.name)')")
            }
            self.token = token
            authentication = fresh
            expiryTimerRuns = fresh.expiresAt != nil
            return [.clearPermissionCache, .watchExpiry(at: fresh.expiresAt)]
        }
    }

    /// The clock for the first token ran out.
    mutating func authenticationTimedOut() -> [Action] {
        guard authenticationTimerRuns else { return [] }
        authenticationTimerRuns = false
        guard !isAuthenticated, phase == .awaitingHello else { return [] }
        return refuse("no token within \(authenticationTimeout)")
    }

    /// The token's expiry came (no `hello` moved it).
    mutating func tokenExpired() -> [Action] {
        guard expiryTimerRuns else { return [] }
        expiryTimerRuns = false
        guard phase == .open else { return [] }
        return refuse("the token has expired: send a hello with a new token before it does")
    }

    /// The admission's pool is full and this connection has waited longest: it is dropped
    /// at once, so that a flood of tokenless sockets cannot hold slots.
    mutating func displaced() -> [Action] {
        guard phase != .ending, phase != .closed else { return [] }
        phase = .ending
        return cancelAuthenticationTimer() + leaveAdmission() + [.drop]
    }

    /// The session ends the connection for another reason (shutdown, drain): the clock for
    /// the first token stops.
    mutating func ending() -> [Action] {
        guard phase != .ending, phase != .closed else { return [] }
        phase = .ending
        return cancelAuthenticationTimer()
    }

    /// The connection closed: the timers stop and the admission gets its places back.
    mutating func closed() -> [Action] {
        guard phase != .closed else { return [] }
        phase = .closed
        var actions = cancelAuthenticationTimer()
        if expiryTimerRuns {
            expiryTimerRuns = false
            actions.append(.cancelExpiryTimer)
        }
        return actions + leaveAdmission()
    }

    // MARK: Steps

    /// The client proved who it is: it stops waiting and asks the admission.
    private mutating func establish(_ authentication: Authentication, token: String?) -> [Action] {
        var actions: [Action] = []
        if isWaitingInPool {
            isWaitingInPool = false
            actions.append(.leaveWaitingPool)
        }
        actions += cancelAuthenticationTimer()
        phase = .admitting(authentication, token: token, welcomed: true)
        return actions + [.admit(authentication)]
    }

    private mutating func refuse(_ reason: String) -> [Action] {
        phase = .ending
        var actions = cancelAuthenticationTimer()
        if expiryTimerRuns {
            expiryTimerRuns = false
            actions.append(.cancelExpiryTimer)
        }
        return actions + [.refuse(reason)]
    }

    private mutating func cancelAuthenticationTimer() -> [Action] {
        guard authenticationTimerRuns else { return [] }
        authenticationTimerRuns = false
        return [.cancelAuthenticationTimer]
    }

    /// Gives back the connection's places in the admission (once).
    private mutating func leaveAdmission() -> [Action] {
        var actions: [Action] = []
        if isWaitingInPool {
            isWaitingInPool = false
            actions.append(.leaveWaitingPool)
        }
        if let identity = admittedIdentity.take() {
            actions.append(.leaveAdmission(identity: identity))
        }
        return actions
    }
}
