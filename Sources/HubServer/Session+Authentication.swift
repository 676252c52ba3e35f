import HubEngine
import HubValue
import HubWire
import HubPipeline
import HubRegistry
import Logging

/// Carrying out what the connection's ``SessionAuthentication`` decides: the admission, the
/// timers, the refusals; and checking the tokens it is given.
extension Session {
    /// Carries out what the authentication's state machine decided, in order.
    func carryOut(_ actions: [SessionAuthentication.Action]) {
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
    func admit(_ authentication: Authentication) -> [SessionAuthentication.Action] {
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
    func watchExpiry(_ expiresAt: Double?) {
        expiryTimer.take()?.cancel()
        guard let expiresAt else { return }
        let left = max(0, expiresAt - Session.wallSeconds(hub))
        let deadline = hub.scheduler.now.advanced(by: .nanoseconds(Int64(min(left, 1e9) * 1e9)))
        expiryTimer = hub.scheduler.schedule(after: deadline) { [weak self] in
            guard let self, !self.isClosed else { return }
            self.carryOut(self.auth.tokenExpired())
        }
    }

    func hello(token: String?, client: String?, batch: Bool) {
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

    /// Drops a connection that has waited longest to authenticate, for a newcomer (the
    /// pool of waiting connections is full): at once, without a close handshake, so that
    /// a flood of tokenless sockets cannot hold slots.
    func displace() {
        guard !isClosed else { return }
        carryOut(auth.displaced())
    }

    /// Sends `unauthorized` with `reason` and closes with 4401 (after what is queued).
    func refuseUnauthenticated(_ reason: String) {
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
