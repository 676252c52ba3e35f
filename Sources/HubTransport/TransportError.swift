/// An error of the WebSocket transport, with a stable machine-readable ``code``.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable identifier of the kind of failure.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as text, stable across releases.
        public var rawValue: String

        /// Wraps a raw code.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// libwebsockets could not create the event loop's context.
        public static let contextCreationFailed = Code(rawValue: "context_creation_failed")
        /// The server could not listen on the configured address.
        public static let listenFailed = Code(rawValue: "listen_failed")
        /// A client connection could not be established (refused, unreachable, bad handshake).
        public static let connectionFailed = Code(rawValue: "connection_failed")
        /// The event loop has shut down; the work was not run.
        public static let eventLoopShutDown = Code(rawValue: "event_loop_shut_down")
        /// An argument was out of range (for example a port above 65535).
        public static let invalidArgument = Code(rawValue: "invalid_argument")

        /// A TLS file (certificate, private key or CA file) cannot be read or used;
        /// the message names the file.
        public static let tlsConfigurationFailed = Code(rawValue: "tls_configuration_failed")

        /// The raw code.
        public var description: String { rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A human-readable explanation (from libwebsockets where it gave one).
    public var message: String

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
