extension WebSocketServer {
    /// How the server listens and what it accepts.
    public struct Configuration: Sendable {
        /// The address to listen on (an IP address or an interface name).
        public var host: String
        /// The port; `0` picks an ephemeral one (read ``WebSocketServer/port`` after start).
        public var port: Int
        /// The subprotocol selected when a client offers it (clients offering none are
        /// accepted too).
        public var subprotocol: String
        /// Per-connection limits (maximum message size, fragment size).
        public var limits: WebSocketConnection.Limits
        /// Open connections beyond this are closed with ``connectionLimitCloseCode`` right
        /// after the handshake.
        public var maximumConnections: Int
        /// The close code of connections refused beyond ``maximumConnections``; by default
        /// 1008, policy violation (not 1013, try again later, which libwebsockets 4.1
        /// clients reject as a protocol error).
        public var connectionLimitCloseCode: WebSocketCloseCode
        /// Seconds in which nothing came from a client before the server pings it, and
        /// between pings while the silence lasts (0 disables keepalive). See ``Keepalive``.
        public var pingInterval: UInt16
        /// Seconds of silence (no message, no pong) before the server hangs up.
        public var idleTimeout: UInt16
        /// Seconds a connection may take to send its upgrade request, or an HTTP request
        /// and its body (and a keep-alive connection its next request), before it is
        /// dropped: sockets that connect and send nothing, or send slowly, hold a
        /// descriptor only this long.
        public var handshakeTimeout: UInt16
        /// The largest body of a plain HTTP request (larger ones are answered 413 and
        /// closed, as soon as their `Content-Length` or chunk sizes say so).
        public var maximumRequestBodySize: Int
        /// The largest head of an HTTP request, request line and header fields (larger
        /// ones are answered 431, a request line over half of it 414, and closed).
        public var maximumRequestHeadSize: Int
        /// The most accepted sockets still waiting for their upgrade (or HTTP) request: a
        /// newcomer beyond it closes the one that has waited longest, so that sockets
        /// that connect and send nothing cannot hold every descriptor.
        public var maximumPendingHandshakes: Int
        /// The size of lws's receive chunk of a client connection (bytes); server sockets
        /// read what the loop's service buffer holds.
        public var receiveBufferSize: Int
        /// The certificate and key to serve `wss://` with; `nil` serves plain `ws://`.
        public var tls: TLSConfiguration?
        /// Whether the server listens on ``port``; `false`: it serves only the sockets
        /// another server accepted and handed it (``WebSocketServer/adopt(_:)``: a
        /// server on another loop of the process, one port for them all).
        public var listens = true
        /// The most accepted sockets the server takes into lws (``WebSocketServer/adopt(_:)``)
        /// in one pass of its loop, and (listening) the most it accepts in one pass; the
        /// rest wait in the kernel's accept queue or the server's, for the next passes.
        /// A pass that upgrades hundreds of sockets at once would delay every other
        /// connection of the loop by as long. `nil`: 16 plain, 4 with TLS (OpenSSL 3.0's
        /// server side of a TLS 1.3 handshake costs 1-3 ms of CPU here, most of it when
        /// the client's last flight arrives, in the pass after the one that adopted it).
        public var adoptionsPerPass: Int?
        /// The most sockets whose WebSocket close handshake is complete the server closes
        /// in one pass of its loop (each close costs lws 4.1.6 a walk of the loop's
        /// connections); a pass also stops closing after 2 ms. The rest close in the
        /// next passes.
        public var closesPerPass = 64
        /// The most WebSocket upgrade requests the server answers in one pass of its loop
        /// (each is a 101, a connection and what the delegate does when it opens, about
        /// 0.1 ms here); a pass also stops answering after 2 ms. Requests read meanwhile
        /// wait, and are answered in the next passes, oldest first: clients that connect
        /// together send their requests together, and one pass would otherwise answer
        /// them all.
        public var upgradesPerPass = 64
        /// Counts the open connections of every server that shares it against
        /// ``maximumConnections`` (the servers of one port on several loops); `nil` counts
        /// this server's own.
        public var connectionTally: ConnectionTally?
        /// The answer to a request refused before it reached the delegate (malformed, or
        /// its body too large), given the status, what was wrong and the request's path
        /// when its head was read; `nil`, or a `nil` answer, sends the status with the
        /// reason as plain text. Lets an API answer its own paths in its own error format.
        /// Runs on the loop.
        public var refusalAnswer: (@Sendable (_ status: Int, _ reason: String, _ path: String?) -> HTTPResponse?)?

        /// Creates a configuration; defaults: `127.0.0.1`, ephemeral port, `hub.v1`, 1 MiB
        /// messages, 10,000 connections (more are closed with 1008), ping
        /// after 30 s, hang up after 60 s, no TLS, 5 s to send the upgrade request, 1,000
        /// sockets waiting to send it, 1 MiB request bodies, 16 KiB request heads.
        public init(
            host: String = "127.0.0.1", port: Int = 0, subprotocol: String = "hub.v1",
            limits: WebSocketConnection.Limits = .init(), maximumConnections: Int = 10_000,
            connectionLimitCloseCode: WebSocketCloseCode = .policyViolation,
            pingInterval: UInt16 = 30, idleTimeout: UInt16 = 60, receiveBufferSize: Int = 32 << 10,
            tls: TLSConfiguration? = nil, handshakeTimeout: UInt16 = 5, maximumPendingHandshakes: Int = 1000,
            maximumRequestBodySize: Int = 1 << 20, maximumRequestHeadSize: Int = 16 << 10
        ) {
            self.maximumRequestBodySize = max(0, maximumRequestBodySize)
            self.maximumRequestHeadSize = max(256, maximumRequestHeadSize)
            self.tls = tls
            self.handshakeTimeout = handshakeTimeout
            self.maximumPendingHandshakes = max(1, maximumPendingHandshakes)
            self.host = host
            self.port = port
            self.subprotocol = subprotocol
            self.limits = limits
            self.maximumConnections = maximumConnections
            self.connectionLimitCloseCode = connectionLimitCloseCode
            self.pingInterval = pingInterval
            self.idleTimeout = idleTimeout
            self.receiveBufferSize = receiveBufferSize
        }

        /// ``adoptionsPerPass``, or its default for the transport.
        var effectiveAdoptionsPerPass: Int {
            max(1, adoptionsPerPass ?? (tls == nil ? 16 : 4))
        }

        /// The parser's bounds for this configuration.
        var requestLimits: HTTPRequestParser.Limits {
            HTTPRequestParser.Limits(
                maximumRequestLineLength: maximumRequestHeadSize / 2, maximumHeadSize: maximumRequestHeadSize,
                maximumHeaderCount: 100, maximumBodySize: maximumRequestBodySize)
        }
    }
}
