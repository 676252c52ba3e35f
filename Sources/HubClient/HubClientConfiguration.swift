import HubTransport

extension HubClient {
    /// How a ``HubClient`` connects and behaves.
    public struct Configuration: Sendable {
        /// A bearer token: sent as `Authorization: Bearer <token>` on the upgrade
        /// request, or in `hello` when ``tokenInHello`` is set.
        public var token: String?
        /// Send the token in `hello` instead of the `Authorization` header.
        public var tokenInHello: Bool
        /// The client name sent in `hello` (a `hello` is sent only when there is a
        /// name, `batch`, or a token to put in it).
        public var clientName: String?
        /// `batch: true` in `hello` (the default): the server may send several values
        /// of a subscription in one `next`, which the client unpacks; a
        /// subscription's own ``SubscribeOptions/batch`` decides for it. `false` asks
        /// for one message per value.
        public var batch: Bool
        /// How long connecting (TCP, handshake and the server's `welcome`) may take.
        public var connectTimeout: Duration
        /// How long an acked call (`send`, `complete`, `fail`, `trigger`, `list`) may
        /// take, including the wait for a connection or a reconnect.
        public var requestTimeout: Duration
        /// What happens after an established connection is lost.
        public var reconnect: ReconnectPolicy
        /// The largest message accepted from the server (bytes).
        public var maximumMessageSize: Int
        /// Seconds of silence before the transport pings the server (0: never).
        public var pingInterval: UInt16
        /// How a `wss://` URL's server is verified (ignored for `ws://`): by default
        /// against the system's CAs; a CA file, or accepting self-signed certificates,
        /// for tests and development.
        public var tls: ClientTLS

        /// A configuration; defaults: no token, `hello` with `batch`, 10 s to connect, 30 s per
        /// call, reconnect with the default ``ReconnectPolicy``, 16 MiB messages,
        /// ping after 30 s of silence.
        public init(
            token: String? = nil, tokenInHello: Bool = false, clientName: String? = nil, batch: Bool = true,
            connectTimeout: Duration = .seconds(10), requestTimeout: Duration = .seconds(30),
            reconnect: ReconnectPolicy = ReconnectPolicy(), maximumMessageSize: Int = 16 << 20,
            pingInterval: UInt16 = 30, tls: ClientTLS = ClientTLS()
        ) {
            self.tls = tls
            self.token = token
            self.tokenInHello = tokenInHello
            self.clientName = clientName
            self.batch = batch
            self.connectTimeout = connectTimeout
            self.requestTimeout = requestTimeout
            self.reconnect = reconnect
            self.maximumMessageSize = maximumMessageSize
            self.pingInterval = pingInterval
        }
    }
}
