
import HubPipeline

/// How sessions of a hub server behave where the protocol leaves a choice.
public struct SessionConfiguration: Sendable {
    /// The `server` field of `welcome`.
    public var serverName: String
    /// The most live subscriptions on one connection; more are `limit_exceeded`.
    public var maxSubscriptions: Int
    /// The most bytes queued for one connection before it is closed with 4008.
    public var maxQueuedBytes: Int
    /// Whether clients may subscribe to ad-hoc pipeline text (`forbidden` otherwise).
    public var allowsPipelines: Bool
    /// The accepted bearer tokens; `nil` when the server requires no authentication.
    public var tokens: Set<String>?
    /// How long an unauthenticated connection may wait before sending `hello` with a token.
    public var authenticationTimeout: Duration
    /// How long a connection the session closes itself (slow consumer, unauthorized) is
    /// kept for its close frame before it is dropped: PROTOCOL.md §5.8 asks for at least
    /// 10 s, so that a client that resumes reading still receives the close frame.
    public var closeTimeout: Duration
    /// The tokens whose clients may subscribe to ad-hoc pipelines when
    /// ``allowsPipelines`` is on; `nil`: every client.
    public var pipelineTokens: Set<String>? = nil
    /// What one connection's pipelines and buffers may spend: evaluation steps per second,
    /// bytes held (buffers, `collect`, `zip`, compiled pipelines), live timers.
    public var connectionBudget: ResourceBudget.Limits = .connection
    /// The rates one connection may send at; over them it gets `limit_exceeded` and is
    /// closed with 4429 (not limited by default).
    public var inboundRate = InboundRateLimits()
    /// The identities and JWT keys (`auth.identities`, `auth.jwt`); with them (or with
    /// ``tokens``) authentication is required.
    public var auth: AuthConfiguration?
    /// What all the connections of one identity may spend together (a configured identity
    /// or a JWT subject; not `anonymous` or the bare tokens).
    public var identityBudget: ResourceBudget.Limits = .identity
    /// The most connections one identity may have open at once, unless it sets its own
    /// (`nil`: only ``HubService/Configuration/maxConnections`` bounds them).
    public var maxConnectionsPerIdentity: Int?
    /// How long a publisher slowed down by a subject with `overflow: block` waits for the
    /// subject's full buffers to drain; then the subscriptions still full end with
    /// `overflow` and the publisher reads on (PROTOCOL.md §5.7).
    public var publisherWait: Duration = .seconds(10)

    /// Whether clients must authenticate.
    public var requiresAuthentication: Bool { tokens != nil || auth != nil }

    /// The defaults of PROTOCOL.md.
    public init(
        serverName: String = "reactive-hub/0.1",
        maxSubscriptions: Int = 10_000,
        maxQueuedBytes: Int = 16 << 20,
        allowsPipelines: Bool = true,
        tokens: Set<String>? = nil,
        authenticationTimeout: Duration = .seconds(5),
        closeTimeout: Duration = .seconds(10)
    ) {
        self.serverName = serverName
        self.maxSubscriptions = maxSubscriptions
        self.maxQueuedBytes = maxQueuedBytes
        self.allowsPipelines = allowsPipelines
        self.tokens = tokens
        self.authenticationTimeout = authenticationTimeout
        self.closeTimeout = closeTimeout
    }
}
