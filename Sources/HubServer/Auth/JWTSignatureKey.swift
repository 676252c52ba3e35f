import COpenSSL

/// A key that checks the signatures of JSON Web Tokens of one algorithm, with the
/// system's libcrypto (OpenSSL 3, which the transport links for TLS already): an HS256
/// shared secret, an ES256 public key (P-256), or an RS256 public key (2048 bits or
/// more). Immutable; a public key is freed with the object.
public final class JWTSignatureKey: @unchecked Sendable {
    /// The JWS algorithm it checks (`HS256`, `ES256`, `RS256`): a token's header must name it.
    public let algorithm: String
    private let material: Material

    private enum Material {
        case secret([UInt8])
        case publicKey(OpaquePointer)
    }

    /// The smallest RSA key accepted, in bits.
    public static let minimumRSABits = 2048

    /// The key of `configuration`.
    ///
    /// - Throws: ``JWTConfigurationError`` when an HS256 secret is empty, or a PEM holds
    ///   no public key (a `PUBLIC KEY`, `RSA PUBLIC KEY` or `CERTIFICATE` block) of the
    ///   algorithm: P-256 for ES256, RSA of at least 2048 bits for RS256.
    public init(_ configuration: JWTConfiguration.KeyConfiguration) throws(JWTConfigurationError) {
        algorithm = configuration.algorithm
        switch configuration.material {
        case .secret(let secret):
            guard !secret.isEmpty else { throw JWTConfigurationError("an HS256 secret cannot be empty") }
            material = .secret(Array(secret.utf8))
        case .ecdsaPublicKey(let pem), .rsaPublicKey(let pem):
            var text = pem
            let parsed = text.withUTF8 { bytes in
                bytes.withMemoryRebound(to: CChar.self) { hub_public_key_from_pem($0.baseAddress, $0.count) }
            }
            guard let key = parsed else {
                throw JWTConfigurationError("no PEM public key (PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE) in it")
            }
            let kind = hub_key_kind(key)
            if configuration.algorithm == "ES256", kind != Int32(HUB_KEY_EC_P256.rawValue) {
                hub_key_free(key)
                throw JWTConfigurationError("an ES256 key must be an EC key on the P-256 curve")
            }
            if configuration.algorithm == "RS256" {
                guard kind == Int32(HUB_KEY_RSA.rawValue) else {
                    hub_key_free(key)
                    throw JWTConfigurationError("an RS256 key must be an RSA key")
                }
                let bits = Int(hub_key_bits(key))
                guard bits >= Self.minimumRSABits else {
                    hub_key_free(key)
                    throw JWTConfigurationError("an RS256 key of \(bits) bits is too small (at least \(Self.minimumRSABits))")
                }
            }
            material = .publicKey(key)
        }
    }

    deinit {
        if case .publicKey(let key) = material { hub_key_free(key) }
    }

    /// Whether `signature` (a JWS signature: the HMAC, r then s for ES256, PKCS #1 v1.5
    /// for RS256) signs `input` (the token's `header.payload`) with this key.
    public func verify(_ signature: [UInt8], signs input: [UInt8]) -> Bool {
        switch material {
        case .secret(let secret):
            guard signature.count == 32 else { return false }
            var mac = [UInt8](repeating: 0, count: 32)
            guard hub_hmac_sha256(secret, secret.count, input, input.count, &mac) == 1 else { return false }
            return hub_equal_in_constant_time(mac, signature, 32) == 1
        case .publicKey(let key):
            if algorithm == "ES256" {
                return hub_verify_es256(key, signature, signature.count, input, input.count) == 1
            }
            return hub_verify_sha256_der(key, signature, signature.count, input, input.count) == 1
        }
    }
}
