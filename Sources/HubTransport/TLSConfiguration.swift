import Foundation

/// The certificate and private key a ``WebSocketServer`` serves `wss://` with.
public struct TLSConfiguration: Sendable, Hashable {
    /// The PEM certificate (chain) file.
    public var certificatePath: String
    /// The PEM private key file (unencrypted).
    public var privateKeyPath: String

    /// Creates a configuration from two PEM file paths.
    public init(certificatePath: String, privateKeyPath: String) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
    }

    /// Checks that both files are readable.
    ///
    /// - Throws: ``TransportError`` `tls_configuration_failed` naming the first file
    ///   that cannot be read.
    public func validate() throws(TransportError) {
        try TLSConfiguration.checkReadable(certificatePath, role: "certificate")
        try TLSConfiguration.checkReadable(privateKeyPath, role: "private key")
    }

    /// Throws `tls_configuration_failed` naming `path` unless it is a readable regular file.
    static func checkReadable(_ path: String, role: String) throws(TransportError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw TransportError(code: .tlsConfigurationFailed, message: "TLS \(role) file '\(path)' does not exist")
        }
        guard !isDirectory.boolValue, FileManager.default.isReadableFile(atPath: path) else {
            throw TransportError(
                code: .tlsConfigurationFailed, message: "TLS \(role) file '\(path)' is not a readable file")
        }
    }
}
