import HubValue
import HubWire

/// What the client core sees of one remote subscription. Loop thread only.
protocol RemoteSubscriptionEndpoint: AnyObject {
    /// The `subscribe` to send (target, options and the demand requested so far; when
    /// resuming, `since` the last offset delivered and the demand not yet met), or
    /// `nil` when the subscription was cancelled before it could be sent.
    func takeSubscribeRequest() -> SubscribeRequest?
    /// The subscription was sent with `id`.
    func didOpen(id: UInt64)
    /// The server confirmed it: with the subject's history position, if it has history,
    /// and whether a `since` was recovered.
    func confirmed(history: HistoryPosition?, recovered: Bool?)
    /// A value arrived for it, with its offset for a subject with history.
    func deliver(_ value: Value, offset: UInt64?)
    /// The server completed it.
    func finish()
    /// It failed (a server error with its id, a lost connection, a closed client).
    func fail(_ error: HubClientError)
    /// The connection is going away: returns whether the subscription resumes on the
    /// next connection (a subscription to a subject with history); if not, the core
    /// fails it.
    func prepareToResume() -> Bool
}
