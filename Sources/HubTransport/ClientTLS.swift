/// How a ``WebSocketClient`` connection uses TLS (`wss://`).
///
/// By default the server's certificate must chain to the system's trusted CAs and
/// name the host connected to.
public struct ClientTLS: Sendable, Hashable {
    /// Accept a self-signed server certificate (for tests and development only).
    public var allowsSelfSigned: Bool
    /// A PEM file of CA certificates to trust instead of the system's.
    public var caFilePath: String?

    /// Creates a TLS setting; defaults: verify against the system CAs.
    public init(allowsSelfSigned: Bool = false, caFilePath: String? = nil) {
        self.allowsSelfSigned = allowsSelfSigned
        self.caFilePath = caFilePath
    }
}
