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
/// finishes it; ``HubClient/close()`` fails it with `closed`. A lost connection
/// fails it with `disconnected`, unless it subscribes to a subject with history and
/// the client reconnects: then it resumes after the last value it delivered, within
/// the demand still unmet, with no gap, duplicate or failure (`resume_failed` if the
/// hub no longer holds what followed).
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
        RemoteSubscriptions.attach(subscriber, core: client.core, target: target, options: options)
    }

    /// The values as an `AsyncSequence` that keeps `prefetch` values requested
    /// ahead of the consumer (see ``HubValues``).
    /// The same subscription delivering each value with its offset and epoch (a subject
    /// with history), as ``HubEntry``.
    public var entries: HubEntryPublisher {
        HubEntryPublisher(client: client, target: target, options: options)
    }

    public func values(prefetch: Int = HubValues.defaultPrefetch) -> HubValues {
        HubValues(publisher: self, prefetch: prefetch)
    }
}
