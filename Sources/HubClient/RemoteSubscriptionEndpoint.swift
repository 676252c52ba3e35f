import HubValue
import HubWire

/// What the client core sees of one remote subscription. Loop thread only.
protocol RemoteSubscriptionEndpoint: AnyObject {
    /// The `subscribe` to send (target, options and the demand requested so far),
    /// or `nil` when the subscription was cancelled before it could be sent.
    func takeSubscribeRequest() -> SubscribeRequest?
    /// The subscription was sent with `id`.
    func didOpen(id: UInt64)
    /// A value arrived for it.
    func deliver(_ value: Value)
    /// The server completed it.
    func finish()
    /// It failed (a server error with its id, a lost connection, a closed client).
    func fail(_ error: HubClientError)
}
