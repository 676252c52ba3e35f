import HubEngine
import HubLoop
import HubValue
import HubWire
import HubTransport

/// A remote subscription delivering each value with its offset and epoch
/// (``HubEntry``): ``HubPublisher/entries``. Everything else is as for ``HubPublisher``.
public struct HubEntryPublisher: Publisher, Sendable {
    /// Values with their place in the subject's history.
    public typealias Output = HubEntry
    /// Failures are client errors carrying the server's code.
    public typealias Failure = HubClientError

    /// The client the subscription is opened on.
    public let client: HubClient
    /// `to` a name, or an ad-hoc `pipeline`.
    public let target: SubscribeRequest.Target
    /// The optional `subscribe` fields.
    public let options: SubscribeOptions

    init(client: HubClient, target: SubscribeRequest.Target, options: SubscribeOptions) {
        self.client = client
        self.target = target
        self.options = options
    }

    /// Opens one remote subscription for `subscriber` (on the client's loop).
    public func receive<S: Subscriber>(subscriber: S) where S.Input == HubEntry, S.Failure == HubClientError {
        RemoteSubscriptions.attach(subscriber, core: client.core, target: target, options: options)
    }
}

/// Attaches a subscriber to a new remote subscription on the client's loop.
enum RemoteSubscriptions {
    static func attach<S: Subscriber>(
        _ subscriber: S, core: LoopBound<ClientCore>, target: SubscribeRequest.Target, options: SubscribeOptions
    ) where S.Input: HubDelivery, S.Failure == HubClientError {
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
}
