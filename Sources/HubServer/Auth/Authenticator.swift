import HubRegistry
import HubWire

/// The identities a broker knows and how each proves who it is (configuration `auth`):
/// static tokens, and JWT subjects.
public struct AuthConfiguration: Sendable {
    /// One configured identity (`auth.identities.NAME`).
    public struct IdentityConfiguration: Sendable, Hashable {
        /// The identity (its name, permissions and connection limit).
        public var identity: Identity
        /// The static tokens that authenticate as it.
        public var tokens: [String]
        /// The JWT subjects (`sub`) that authenticate as it when their token carries no
        /// permissions of its own.
        public var jwtSubjects: [String]

        /// An identity configuration.
        public init(identity: Identity, tokens: [String] = [], jwtSubjects: [String] = []) {
            self.identity = identity
            self.tokens = tokens
            self.jwtSubjects = jwtSubjects
        }
    }

    /// The configured identities, in file order.
    public var identities: [IdentityConfiguration]
    /// The JWT keys and required claims, if tokens may be JWTs.
    public var jwt: JWTConfiguration?

    /// An auth configuration.
    public init(identities: [IdentityConfiguration] = [], jwt: JWTConfiguration? = nil) {
        self.identities = identities
        self.jwt = jwt
    }
}

/// Who a presented token says the client is, and until when.
public struct Authentication: Sendable, Equatable {
    /// The identity.
    public var identity: Identity
    /// When the authentication ends (a JWT's `exp`, seconds since the epoch), if it does.
    public var expiresAt: Double?

    /// An authentication.
    public init(identity: Identity, expiresAt: Double? = nil) {
        self.identity = identity
        self.expiresAt = expiresAt
    }
}

/// Turns a presented token into an ``Authentication``: a static token of an identity or
/// of `auth.tokens`, or a JWT verified by the ``JWTVerifier``. Immutable; used on the loop.
public final class Authenticator: Sendable {
    /// Every static token and whom it authenticates.
    public let tokens: [String: Identity]
    /// The identities JWT subjects map to.
    public let jwtSubjects: [String: Identity]
    /// The JWT verifier, when tokens may be JWTs.
    public let jwt: JWTVerifier?

    /// The identity of every token of `auth.tokens` (no identity of its own): every permission.
    public static let bareTokenIdentity = Identity(name: "tokens", permissions: .everything, hasOwnBudget: false)

    /// An authenticator for the bare `tokens` (every permission), the identities of
    /// `configuration`, and JWTs checked by `jwt`.
    public init(tokens: Set<String> = [], configuration: AuthConfiguration = AuthConfiguration(), jwt: JWTVerifier? = nil) {
        var table: [String: Identity] = [:]
        for token in tokens { table[token] = Authenticator.bareTokenIdentity }
        var subjects: [String: Identity] = [:]
        for entry in configuration.identities {
            for token in entry.tokens { table[token] = entry.identity }
            for subject in entry.jwtSubjects { subjects[subject] = entry.identity }
        }
        self.tokens = table
        self.jwtSubjects = subjects
        self.jwt = jwt
    }

    /// Whether anything at all is accepted (otherwise every token is refused).
    public var acceptsAnything: Bool { !tokens.isEmpty || jwt != nil }

    /// The authentication `token` gives at `now` (seconds since the epoch), or
    /// `unauthorized` saying why not.
    public func authenticate(_ token: String, now: Double) throws(HubError) -> Authentication {
        if let identity = tokens[token] { return Authentication(identity: identity) }
        guard let jwt, JWTVerifier.looksLikeJWT(token) else {
            throw HubError(.unauthorized, "the token is not accepted")
        }
        let claims = try jwt.verify(token, now: now)
        // The connection ends at `exp` plus the leeway the token was checked with.
        let expiresAt = claims.expiresAt.map { $0 + jwt.leeway }
        if let permissions = claims.permissions {
            return Authentication(identity: Identity(name: "jwt:\(claims.subject)", permissions: permissions), expiresAt: expiresAt)
        }
        guard let identity = jwtSubjects[claims.subject] else {
            throw HubError(
                .unauthorized,
                "the token's subject '\(claims.subject)' has no permissions (no '\(JWTVerifier.permissionsClaim)' claim, and no identity lists it in jwtSubjects)")
        }
        return Authentication(identity: identity, expiresAt: expiresAt)
    }
}
