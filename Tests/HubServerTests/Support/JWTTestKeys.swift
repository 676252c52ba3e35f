import Foundation
import HubServer
import HubValue
import JWTKit
import NetworkTestSupport

/// Keys and tokens for the JWT tests: an HS256 secret, and ES256 and RS256 key pairs
/// made with the `openssl` command line (installed by scripts/dev); tokens are signed
/// here with jwt-kit's signers, so that their header and claims can be anything a
/// client might send (expired, wrong audience, `alg: none`…).
struct JWTTestKeys: Sendable {
    static let secret = "test-hs256-secret-that-is-long-enough"

    /// The public keys' PEM, for the broker's configuration.
    let ecdsaPublicPEM: String
    let rsaPublicPEM: String
    /// Signers with the private keys.
    let hs256: any JWTAlgorithm
    let es256: any JWTAlgorithm
    let rs256: any JWTAlgorithm

    /// Made once per test process.
    static func make() async throws -> JWTTestKeys {
        let rsaPrivate = try Insecure.RSA.PrivateKey(pem: String(contentsOfFile: try TestCertificate.get().privateKeyPath, encoding: .utf8))
        let ecPrivate = try ES256PrivateKey(pem: try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]))
        let collection = JWTKeyCollection()
        await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "hs")
        await collection.add(ecdsa: ecPrivate, kid: "es")
        await collection.add(rsa: rsaPrivate, digestAlgorithm: .sha256, kid: "rs")
        return JWTTestKeys(
            ecdsaPublicPEM: ecPrivate.publicKey.pemRepresentation, rsaPublicPEM: rsaPrivate.publicKey.pemRepresentation,
            hs256: try await collection.getKey(for: "hs"), es256: try await collection.getKey(for: "es"),
            rs256: try await collection.getKey(for: "rs"))
    }

    /// An HS256 signer over `secret`.
    static func hmacSigner(_ secret: String) async throws -> any JWTAlgorithm {
        let collection = JWTKeyCollection()
        await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "any")
        return try await collection.getKey(for: "any")
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
    static func token(_ claims: Value, header: Value, signer: (any JWTAlgorithm)?, signature: [UInt8]? = nil) throws -> String {
        let input = base64URL(header.jsonBytes()) + "." + base64URL(claims.jsonBytes())
        let signed = try signature ?? signer?.sign(Array(input.utf8)) ?? []
        return input + "." + base64URL(signed)
    }

    /// A token signed by `signer` (its algorithm in the header, `kid` if given).
    func token(_ claims: Value, with signer: any JWTAlgorithm, kid: String? = nil) throws -> String {
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
        let process = Process()
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
