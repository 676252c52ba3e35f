extension WebSocketClient {
    /// Limits and keepalive of the connections this client opens.
    public struct Configuration: Sendable {
        /// Per-connection limits (maximum message size, fragment size).
        public var limits: WebSocketConnection.Limits
        /// Seconds of silence before lws sends a ping (0 disables keepalive).
        public var pingInterval: UInt16
        /// Seconds of silence (no pong either) before lws hangs up.
        public var idleTimeout: UInt16
        /// The size of lws's receive chunk (bytes).
        public var receiveBufferSize: Int

        /// Creates a configuration; defaults: 1 MiB messages, ping after 30 s, hang up after 60 s.
        public init(
            limits: WebSocketConnection.Limits = .init(), pingInterval: UInt16 = 30, idleTimeout: UInt16 = 60,
            receiveBufferSize: Int = 32 << 10
        ) {
            self.limits = limits
            self.pingInterval = pingInterval
            self.idleTimeout = idleTimeout
            self.receiveBufferSize = receiveBufferSize
        }
    }
}
