import Foundation
import HubEngine
import HubRegistry
import HubTransport
import HubValue
import HubWire
import Logging

/// Who may connect: the admission's bounds, the clients' tokens and JWTs, and operators' HTTP requests.
extension ServiceCore {
    /// The admission's bounds in `configuration`.
    static func admissionLimits(_ configuration: HubService.Configuration) -> Admission.Limits {
        Admission.Limits(
            maxConnections: configuration.maxConnections, maxUnauthenticated: configuration.maxUnauthenticated,
            maxConnectionsPerIdentity: configuration.session.maxConnectionsPerIdentity,
            identityBudget: configuration.session.identityBudget)
    }

    /// The authenticator of `session`'s settings, with `jwt` for JWTs.
    static func authenticator(_ session: SessionConfiguration, jwt: JWTVerifier?) -> Authenticator? {
        guard session.requiresAuthentication else { return nil }
        return Authenticator(tokens: session.tokens ?? [], configuration: session.auth ?? AuthConfiguration(), jwt: jwt)
    }

    /// Uses `verifier` for JWTs from now on (built from the configuration's `auth.jwt`).
    func installJWT(_ verifier: JWTVerifier?) {
        jwtVerifier = verifier
        authenticator = ServiceCore.authenticator(configuration.session, jwt: verifier)
    }

    /// Whether an operator's HTTP request may read `/metrics` or use admin endpoints: on a
    /// server with auth, its `Authorization: Bearer` token must be accepted.
    func mayAdminister(_ request: HTTPRequest) -> Bool {
        guard let authenticator else { return true }
        guard let token = Session.bearerToken(request.authorization),
              let authentication = try? authenticator.authenticate(token, now: Session.wallSeconds(hub)) else {
            return false
        }
        return authentication.identity.mayAdminister("metrics")
    }
}
