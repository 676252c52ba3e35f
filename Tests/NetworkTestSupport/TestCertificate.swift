import Foundation

/// A self-signed certificate for `127.0.0.1` made at test time with the `openssl`
/// command line (nothing is installed: tests that need it are enabled only when
/// ``TestCertificate/opensslAvailable``).
public struct TestCertificate: Sendable {
    /// The directory holding the files (a fresh temporary directory).
    public let directory: String
    /// The PEM certificate (`CN=127.0.0.1`, `subjectAltName=IP:127.0.0.1`, one day).
    public let certificatePath: String
    /// The PEM private key (RSA 2048, unencrypted).
    public let privateKeyPath: String

    /// The `openssl` executable on `PATH`, if any.
    public static let opensslPath: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/openssl"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }()

    /// Whether `openssl` can be run (the TLS tests' enabling condition).
    public static var opensslAvailable: Bool { opensslPath != nil }

    /// One certificate per test process, made on first use.
    public static let shared: Result<TestCertificate, TestCertificateError> = {
        do throws(TestCertificateError) {
            return .success(try make())
        } catch {
            return .failure(error)
        }
    }()

    /// The shared certificate, or the error that prevented making it.
    public static func get() throws -> TestCertificate {
        try shared.get()
    }

    /// Makes a new certificate and key in a new temporary directory.
    public static func make() throws(TestCertificateError) -> TestCertificate {
        guard let openssl = opensslPath else { throw TestCertificateError(message: "openssl is not on PATH") }
        let directory = NSTemporaryDirectory() + "hub-tls-\(UUID().uuidString)"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw TestCertificateError(message: "cannot create \(directory): \(error)")
        }
        let certificate = directory + "/cert.pem"
        let key = directory + "/key.pem"
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw TestCertificateError(message: "cannot run \(openssl): \(error)")
        }
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestCertificateError(
                message: "openssl req failed (\(process.terminationStatus)): \(String(decoding: output, as: UTF8.self))")
        }
        return TestCertificate(directory: directory, certificatePath: certificate, privateKeyPath: key)
    }
}

/// Why a ``TestCertificate`` could not be made.
public struct TestCertificateError: Error, CustomStringConvertible {
    /// What went wrong.
    public var message: String
    /// The message.
    public var description: String { message }
}
