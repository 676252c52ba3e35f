import HubWire

/// The optional fields of a `subscribe` (PROTOCOL.md §3), besides the target
/// and the initial demand (which comes from the subscriber's first requests).
public struct SubscribeOptions: Hashable, Sendable {
    /// `batch`: let the server send several values in one `next` (the client
    /// unpacks them; demand is unaffected), or not (`false`: one message per value).
    /// `nil` leaves the field out: the configuration's ``HubClient/Configuration/batch``
    /// (true by default) decides.
    public var batch: Bool?
    /// `buffer`: the server-side buffer of a hot source while there is no demand.
    public var buffer: Int?
    /// `overflow`: what the server does when that buffer is full.
    public var overflow: OverflowPolicy?
    /// `since`: on a subject with history, start after an offset the subscriber already
    /// has (`.offset(n, epoch:)`) or with the last values (`.last(k)`), then go on live.
    /// If the server no longer holds them, the subscription fails with
    /// ``HubClientError/Code/resumeFailed`` (its values would have a gap).
    public var since: HistorySince?

    /// Options; all absent by default (the server's defaults apply).
    public init(batch: Bool? = nil, buffer: Int? = nil, overflow: OverflowPolicy? = nil, since: HistorySince? = nil) {
        self.batch = batch
        self.buffer = buffer
        self.overflow = overflow
        self.since = since
    }
}
