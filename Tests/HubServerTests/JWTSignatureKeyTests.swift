import Foundation
import HubServer
import NetworkTestSupport
import Testing

/// The keys JWT signatures are checked with (libcrypto): which PEM forms are taken,
/// which keys are refused, and that a signature verifies only unchanged.
@Suite("JWT signature keys", .enabled(if: TestCertificate.opensslAvailable, "needs the openssl command line for the test keys"))
struct JWTSignatureKeyTests {
    /// A fresh private key made by `openssl genpkey` with `arguments`, and its public key.
    static func keyPair(_ arguments: [String]) throws -> (privatePEM: String, publicPEM: String) {
        let privatePEM = try JWTTestKeys.openssl(["genpkey"] + arguments)
        return (privatePEM, try JWTTestKeys.publicKey(of: privatePEM))
    }

    static func key(_ algorithm: String, _ pem: String) throws(JWTConfigurationError) -> JWTSignatureKey {
        try JWTSignatureKey(.init(material: algorithm == "ES256" ? .ecdsaPublicKey(pem) : .rsaPublicKey(pem)))
    }

    @Test func es256VerifiesItsOwnSignatureOnlyUnchanged() throws {
        let (privatePEM, publicPEM) = try Self.keyPair(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
        let signer = try JWTTestSigner.privateKey(privatePEM, algorithm: "ES256")
        let key = try Self.key("ES256", publicPEM)
        let input = Array("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0".utf8)
        let signature = try signer.sign(input)
        #expect(signature.count == 64)
        #expect(key.verify(signature, signs: input))
        var flipped = signature
        flipped[10] ^= 1
        #expect(!key.verify(flipped, signs: input))
        #expect(!key.verify(signature, signs: input + [0x2e]))
        #expect(!key.verify(Array(signature.prefix(63)), signs: input))
    }

    @Test func rs256TakesSPKIPKCS1AndCertificatePEMs() throws {
        let (privatePEM, publicPEM) = try Self.keyPair(["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
        let signer = try JWTTestSigner.privateKey(privatePEM, algorithm: "RS256")
        let input = Array("header.payload".utf8)
        let signature = try signer.sign(input)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let privateFile = directory.appendingPathComponent("key.pem")
        try privatePEM.write(to: privateFile, atomically: true, encoding: .utf8)
        let pkcs1 = try JWTTestKeys.openssl(["rsa", "-in", privateFile.path, "-RSAPublicKey_out"])
        let certificate = try JWTTestKeys.openssl([
            "req", "-x509", "-key", privateFile.path, "-days", "1", "-subj", "/CN=jwt-test",
        ])
        for pem in [publicPEM, pkcs1, certificate] {
            #expect(pem.contains("BEGIN"))
            let key = try Self.key("RS256", pem)
            #expect(key.verify(signature, signs: input), "\(pem.prefix(40))")
            #expect(!key.verify(signature, signs: input + [1]))
        }
    }

    @Test func keysOfTheWrongKindOrSizeAreRefused() throws {
        let p384 = try Self.keyPair(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]).publicPEM
        let p256 = try Self.keyPair(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]).publicPEM
        let rsa1024 = try Self.keyPair(["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"]).publicPEM
        let rsa2048 = try Self.keyPair(["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]).publicPEM
        let cases: [(String, String, String)] = [
            ("ES256", p384, "an ES256 key must be an EC key on the P-256 curve"),
            ("ES256", rsa2048, "an ES256 key must be an EC key on the P-256 curve"),
            ("RS256", p256, "an RS256 key must be an RSA key"),
            ("RS256", rsa1024, "an RS256 key of 1024 bits is too small (at least 2048)"),
            ("RS256", "not a pem", "no PEM public key (PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE) in it"),
            ("ES256", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
             "no PEM public key (PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE) in it"),
        ]
        for (algorithm, pem, message) in cases {
            #expect(throws: JWTConfigurationError.self) { try Self.key(algorithm, pem) }
            do {
                _ = try Self.key(algorithm, pem)
            } catch {
                #expect(error.description == message)
            }
        }
        #expect(throws: JWTConfigurationError.self) { try JWTSignatureKey(.init(material: .secret(""))) }
    }

    @Test func hs256ComparesTheWholeMAC() throws {
        let key = try JWTSignatureKey(.init(material: .secret("s3cret")))
        let input = Array("a.b".utf8)
        let mac = try JWTTestSigner.hmac("s3cret").sign(input)
        #expect(key.verify(mac, signs: input))
        #expect(!key.verify(Array(mac.prefix(31)), signs: input))
        #expect(!key.verify(mac + [0], signs: input))
        #expect(!key.verify(try JWTTestSigner.hmac("other").sign(input), signs: input))
    }
}
