import Foundation
import HubRegistry
import HubValue
import HubWire

/// Verifies JSON Web Tokens (RFC 7519) presented as bearer tokens: the signature with
/// one of the configured keys (HS256, ES256 or RS256, ``JWTSignatureKey``, with the
/// system's libcrypto), then the claims `exp`, `nbf` (with a leeway), `aud` and `iss`
/// when configured, and `sub`.
///
/// The header's `alg` must be the algorithm of the key that verifies: a token never
/// chooses how it is checked (no `none`, no HS256 with an RSA public key as its secret).
/// With a `kid` in the header only the key with that id is tried. Immutable once made
/// (``make(_:)`` parses the keys before the service runs); ``verify(_:now:)`` is
/// synchronous, for the event loop.
public final class JWTVerifier: Sendable {
    /// One key a token may be signed with.
    public struct Key: Sendable {
        /// Its id (the header's `kid`), if it has one.
        public var kid: String?
        /// What checks signatures (its ``JWTSignatureKey/algorithm`` is the header's `alg`).
        public var signatureKey: JWTSignatureKey
    }

    /// What a verified token says.
    public struct Claims: Sendable, Equatable {
        /// The subject (`sub`).
        public var subject: String
        /// When it expires (`exp`, seconds since the epoch), if it does.
        public var expiresAt: Double?
        /// The permissions it carries (the claim ``permissionsClaim``), if any.
        public var permissions: Permissions?
        /// The whole payload.
        public var payload: Value
    }

    /// The claim that carries permissions: `{"subscribe": […], "publish": […], …, "deny": {…}}`.
    public static let permissionsClaim = "hub"

    /// The keys, in configuration order.
    public let keys: [Key]
    /// The audience a token must name (`aud`, a string or an array), if any.
    public let audience: String?
    /// The issuer a token must name (`iss`), if any.
    public let issuer: String?
    /// How far `exp` and `nbf` may be off (clock skew), in seconds.
    public let leeway: Double

    /// A verifier over `keys`.
    public init(keys: [Key], audience: String? = nil, issuer: String? = nil, leeway: Double = 30) {
        self.keys = keys
        self.audience = audience
        self.issuer = issuer
        self.leeway = leeway
    }

    /// The verifier of `configuration`, if any.
    public static func make(_ configuration: JWTConfiguration?) throws -> JWTVerifier? {
        guard let configuration else { return nil }
        return try make(configuration)
    }

    /// The verifier of `configuration`: parses each key.
    public static func make(_ configuration: JWTConfiguration) throws -> JWTVerifier {
        let keys = try configuration.keys.map { key throws(JWTConfigurationError) in
            Key(kid: key.kid, signatureKey: try JWTSignatureKey(key))
        }
        return JWTVerifier(
            keys: keys, audience: configuration.audience, issuer: configuration.issuer,
            leeway: Double(configuration.leeway.components.seconds)
                + Double(configuration.leeway.components.attoseconds) / 1e18)
    }

    /// Whether `token` looks like a JWT (three base64url parts), so that a static token
    /// is never mistaken for one.
    public static func looksLikeJWT(_ token: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 3 && !parts[0].isEmpty && !parts[1].isEmpty
            && token.utf8.allSatisfy { $0 == UInt8(ascii: ".") || base64URLValue($0) != nil }
    }

    /// Verifies `token` at `now` (seconds since the epoch); throws `unauthorized` saying
    /// what is wrong (never the key material).
    public func verify(_ token: String, now: Double) throws(HubError) -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Self.refused("the token is not a JWT (three dot-separated parts)") }
        guard let headerBytes = Self.base64URLDecode(parts[0]), let header = try? Value.parse(headerBytes, maxDepth: 8),
              case .object = header else {
            throw Self.refused("the token's header is not base64url JSON")
        }
        guard let alg = header["alg"]?.stringValue else { throw Self.refused("the token's header has no 'alg'") }
        let kid = header["kid"]?.stringValue
        // Keys of the header's algorithm; with a `kid`, the key of that id (else those without one).
        var candidates = keys.filter { $0.signatureKey.algorithm == alg }
        if let kid {
            let named = candidates.filter { $0.kid == kid }
            candidates = named.isEmpty ? candidates.filter { $0.kid == nil } : named
        }
        guard !candidates.isEmpty else {
            throw Self.refused(kid.map { "no key '\($0)' for algorithm \(alg)" } ?? "no key for algorithm \(alg)")
        }
        guard let signature = Self.base64URLDecode(parts[2]), !signature.isEmpty else {
            throw Self.refused("the token has no signature")
        }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let verified = candidates.contains { $0.signatureKey.verify(signature, signs: signingInput) }
        guard verified else { throw Self.refused("the token's signature does not verify") }
        guard let payloadBytes = Self.base64URLDecode(parts[1]), let payload = try? Value.parse(payloadBytes, maxDepth: 64),
              case .object = payload else {
            throw Self.refused("the token's payload is not base64url JSON")
        }
        return try claims(payload, now: now)
    }

    /// Checks the registered claims of a verified `payload`.
    func claims(_ payload: Value, now: Double) throws(HubError) -> Claims {
        var expiresAt: Double?
        if let exp = payload["exp"] {
            guard let seconds = exp.doubleValue else { throw Self.refused("the token's 'exp' is not a number") }
            guard now < seconds + leeway else { throw Self.refused("the token has expired") }
            expiresAt = seconds
        }
        if let nbf = payload["nbf"] {
            guard let seconds = nbf.doubleValue else { throw Self.refused("the token's 'nbf' is not a number") }
            guard now + leeway >= seconds else { throw Self.refused("the token is not valid yet ('nbf')") }
        }
        if let audience {
            let named: [String]
            switch payload["aud"] {
            case .string(let one)?: named = [one]
            case .array(let many)?: named = many.compactMap(\.stringValue)
            default: named = []
            }
            guard named.contains(audience) else { throw Self.refused("the token is not for this audience ('aud')") }
        }
        if let issuer {
            guard payload["iss"]?.stringValue == issuer else { throw Self.refused("the token's issuer ('iss') is not accepted") }
        }
        guard let subject = payload["sub"]?.stringValue, !subject.isEmpty else {
            throw Self.refused("the token has no subject ('sub')")
        }
        var permissions: Permissions?
        if let claim = payload[Self.permissionsClaim] {
            do {
                permissions = try Permissions(json: claim)
            } catch {
                throw Self.refused("the token's '\(Self.permissionsClaim)' claim: \(error.message)")
            }
        }
        return Claims(subject: subject, expiresAt: expiresAt, permissions: permissions, payload: payload)
    }

    private static func refused(_ reason: String) -> HubError {
        HubError(.unauthorized, reason)
    }

    // MARK: base64url (RFC 4648 §5, without padding)

    private static func base64URLValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): return 62
        case UInt8(ascii: "_"): return 63
        default: return nil
        }
    }

    /// The bytes of base64url `text` (padding optional), or `nil` when it is not base64url.
    static func base64URLDecode(_ text: Substring) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        while utf8.last == UInt8(ascii: "=") { utf8.removeLast() }
        guard utf8.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in utf8 {
            guard let value = base64URLValue(byte) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return output
    }
}

/// The JWT settings of `auth.jwt`: the keys, and the claims required.
public struct JWTConfiguration: Sendable, Hashable {
    /// One key.
    public struct KeyConfiguration: Sendable, Hashable {
        /// What the key is.
        public enum Material: Sendable, Hashable {
            /// An HS256 shared secret.
            case secret(String)
            /// An ES256 (P-256) public key, PEM.
            case ecdsaPublicKey(String)
            /// An RS256 public key, PEM.
            case rsaPublicKey(String)
        }

        /// The key's id (`kid`), if tokens name it.
        public var kid: String?
        /// The key.
        public var material: Material

        /// A key.
        public init(kid: String? = nil, material: Material) {
            self.kid = kid
            self.material = material
        }

        /// The algorithm name (`HS256`, `ES256`, `RS256`).
        public var algorithm: String {
            switch material {
            case .secret: return "HS256"
            case .ecdsaPublicKey: return "ES256"
            case .rsaPublicKey: return "RS256"
            }
        }

        /// Parses the key now (a PEM that does not parse is an error here, not at the
        /// first token).
        public func validate() throws(JWTConfigurationError) {
            _ = try JWTSignatureKey(self)
        }
    }

    /// The keys tokens may be signed with.
    public var keys: [KeyConfiguration]
    /// The audience tokens must name, if any.
    public var audience: String?
    /// The issuer tokens must name, if any.
    public var issuer: String?
    /// The clock skew allowed for `exp` and `nbf`.
    public var leeway: Duration

    /// A JWT configuration.
    public init(keys: [KeyConfiguration], audience: String? = nil, issuer: String? = nil, leeway: Duration = .seconds(30)) {
        self.keys = keys
        self.audience = audience
        self.issuer = issuer
        self.leeway = leeway
    }
}

/// A key of `auth.jwt` that cannot be used.
public struct JWTConfigurationError: Error, CustomStringConvertible {
    /// What is wrong.
    public var description: String
    init(_ description: String) { self.description = description }
}
