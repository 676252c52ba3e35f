import COpenSSL
import Foundation
import HubServer
import HubValue
import NetworkTestSupport

/// Keys and tokens for the JWT tests: an HS256 secret, and ES256 and RS256 key pairs
/// made with the `openssl` command line (installed by scripts/dev); tokens are signed
/// here with libcrypto (``JWTTestSigner``), so that their header and claims can be
/// anything a client might send (expired, wrong audience, `alg: none`…).
struct JWTTestKeys: Sendable {
    static let secret = "test-hs256-secret-that-is-long-enough"

    /// The public keys' PEM, for the broker's configuration.
    let ecdsaPublicPEM: String
    let rsaPublicPEM: String
    /// Signers with the private keys.
    let hs256: JWTTestSigner
    let es256: JWTTestSigner
    let rs256: JWTTestSigner

    /// Made once per test process.
    static func make() async throws -> JWTTestKeys {
        let rsaPrivate = try String(contentsOfFile: try TestCertificate.get().privateKeyPath, encoding: .utf8)
        let ecPrivate = try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
        return JWTTestKeys(
            ecdsaPublicPEM: try publicKey(of: ecPrivate), rsaPublicPEM: try publicKey(of: rsaPrivate),
            hs256: .hmac(secret), es256: try .privateKey(ecPrivate, algorithm: "ES256"),
            rs256: try .privateKey(rsaPrivate, algorithm: "RS256"))
    }

    /// An HS256 signer over `secret`.
    static func hmacSigner(_ secret: String) async throws -> JWTTestSigner {
        .hmac(secret)
    }

    /// The PEM public key of the PEM private key `pem`.
    static func publicKey(of pem: String) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-test-\(UUID().uuidString).pem")
        try pem.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        return try openssl(["pkey", "-in", file.path, "-pubout"])
    }

    /// The broker's JWT configuration for these keys (ES256 with kid `es-1`).
    func configuration(audience: String? = "hub", leeway: Duration = .seconds(30)) -> JWTConfiguration {
        JWTConfiguration(
            keys: [
                .init(material: .secret(Self.secret)),
                .init(kid: "es-1", material: .ecdsaPublicKey(ecdsaPublicPEM)),
                .init(material: .rsaPublicKey(rsaPublicPEM)),
            ],
            audience: audience, leeway: leeway)
    }

    /// A compact JWS of `claims` with `header`, signed by `signer` (or with `signature` as is).
    static func token(_ claims: Value, header: Value, signer: JWTTestSigner?, signature: [UInt8]? = nil) throws -> String {
        let input = base64URL(header.jsonBytes()) + "." + base64URL(claims.jsonBytes())
        let signed = try signature ?? signer?.sign(Array(input.utf8)) ?? []
        return input + "." + base64URL(signed)
    }

    /// A token signed by `signer` (its algorithm in the header, `kid` if given).
    func token(_ claims: Value, with signer: JWTTestSigner, kid: String? = nil) throws -> String {
        var header: Value = ["alg": .string(signer.name), "typ": "JWT"]
        if let kid, case .object(var members) = header {
            members["kid"] = .string(kid)
            header = .object(members)
        }
        return try Self.token(claims, header: header, signer: signer)
    }

    /// Seconds since the epoch.
    static var now: Double { Date().timeIntervalSince1970 }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The standard output of `openssl arguments`.
    static func openssl(_ arguments: [String]) throws -> String {
        guard let path = TestCertificate.opensslPath else { throw OpenSSLFailure(description: "openssl is not on PATH") }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw OpenSSLFailure(description: "openssl \(arguments.joined(separator: " ")) failed")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// An `openssl` command that could not run or failed.
struct OpenSSLFailure: Error, CustomStringConvertible {
    var description: String
}

/// Signs test tokens: an HS256 secret, or an EC or RSA private key (libcrypto).
struct JWTTestSigner: @unchecked Sendable {
    /// The JWS algorithm (`HS256`, `ES256`, `RS256`).
    let name: String
    private let secret: [UInt8]?
    private let key: PrivateKey?

    /// An EVP private key, freed with the last signer that holds it.
    final class PrivateKey: @unchecked Sendable {
        let pointer: OpaquePointer
        init(_ pointer: OpaquePointer) { self.pointer = pointer }
        deinit { hub_key_free(pointer) }
    }

    static func hmac(_ secret: String) -> JWTTestSigner {
        JWTTestSigner(name: "HS256", secret: Array(secret.utf8), key: nil)
    }

    static func privateKey(_ pem: String, algorithm: String) throws -> JWTTestSigner {
        var text = pem
        let parsed = text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { hub_private_key_from_pem($0.baseAddress, $0.count) }
        }
        guard let parsed else { throw OpenSSLFailure(description: "not a PEM private key") }
        return JWTTestSigner(name: algorithm, secret: nil, key: PrivateKey(parsed))
    }

    /// The JWS signature of `input`.
    func sign(_ input: [UInt8]) throws -> [UInt8] {
        if let secret {
            var mac = [UInt8](repeating: 0, count: 32)
            guard hub_hmac_sha256(secret, secret.count, input, input.count, &mac) == 1 else {
                throw OpenSSLFailure(description: "HMAC failed")
            }
            return mac
        }
        guard let key else { return [] }
        var signature = [UInt8](repeating: 0, count: 1024)
        var length = signature.count
        guard hub_sign_sha256(key.pointer, input, input.count, &signature, &length) == 1 else {
            throw OpenSSLFailure(description: "signing failed")
        }
        return Array(signature.prefix(length))
    }
}
