import HubEngine
import HubValue
import HubWire
import HubTransport

/// A remote subscription as a HubEngine publisher of JSON values: a subject,
/// named pipeline or trigger (`to`), or an ad-hoc pipeline, on a ``HubClient``.
///
/// Every subscriber that attaches opens its own remote subscription (its own
/// id). Demand crosses the network as it is: the demand the subscriber
/// requests before the subscription is sent (typically in
/// `receive(subscription:)`) becomes `subscribe`'s `demand`; later requests,
/// and the extra demand returned from `receive(_:)`, become `request` frames;
/// `cancel()` becomes `cancel`. A server `error` for the subscription fails it
/// with that error's code (``HubClientError/serverError``); `complete`
/// finishes it; a lost connection or ``HubClient/close()`` fails it with
/// `disconnected` or `closed`.
///
/// Threading: the subscriber's callbacks (`receive(subscription:)`,
/// `receive(_:)`, `receive(completion:)`) always run on the client's event
/// loop. `subscribe`/`receive(subscriber:)`, `request` and `cancel` may be
/// called on any thread; off the loop they hop to it (so a value may still
/// arrive after a `cancel()` made on another thread, never after one made on
/// the loop). Engine operators chained after it run on the loop too.
public struct HubPublisher: Publisher, Sendable {
    /// Values are JSON values.
    public typealias Output = Value
    /// Failures are client errors carrying the server's code.
    public typealias Failure = HubClientError

    /// The client the subscriptions are made on.
    public let client: HubClient
    /// What is subscribed to.
    public let target: SubscribeRequest.Target
    /// The optional `subscribe` fields.
    public let options: SubscribeOptions

    init(client: HubClient, target: SubscribeRequest.Target, options: SubscribeOptions) {
        self.client = client
        self.target = target
        self.options = options
    }

    /// Attaches `subscriber`: on the loop, it receives its subscription, then the
    /// remote subscription is opened with the demand it requested so far.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Value, S.Failure == HubClientError {
        let core = client.core
        let target = self.target
        let options = self.options
        let attach = {
            let subscription = RemoteSubscription(
                core: core.value, target: target, options: options, subscriber: subscriber)
            subscriber.receive(subscription: subscription)
            subscription.start()
        }
        if core.eventLoop.inEventLoop {
            attach()
        } else {
            let box = LoopBound(attach, eventLoop: core.eventLoop)
            core.eventLoop.execute { box.value() }
        }
    }

    /// The values as an `AsyncSequence` that keeps `prefetch` values requested
    /// ahead of the consumer (see ``HubValues``).
    public func values(prefetch: Int = 16) -> HubValues {
        HubValues(publisher: self, prefetch: prefetch)
    }
}
