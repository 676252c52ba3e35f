/// A publisher that starts producing only when told to, as Combine's `ConnectablePublisher`.
///
/// Subscribers attach first; ``connect()`` then subscribes the publisher to its
/// upstream, and cancelling the returned value disconnects it.
public protocol ConnectablePublisher<Output, Failure>: Publisher {
    /// Connects to the upstream; cancel the result to disconnect.
    func connect() -> any Cancellable
}

extension ConnectablePublisher {
    /// Connects on the first subscription and disconnects when the last subscriber cancels.
    public func autoconnect() -> Publishers.Autoconnect<Self> {
        Publishers.Autoconnect(upstream: self)
    }
}
