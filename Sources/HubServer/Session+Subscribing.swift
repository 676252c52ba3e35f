import HubEngine
import HubValue
import HubWire
import HubPipeline
import HubRegistry
import Logging

/// `subscribe` and `request`: a name's, a pipeline's or a subject's history's publisher,
/// ending in a ``RemoteSubscriber``.
extension Session {
    func subscribe(id: UInt64, _ check: SubscribeCheck) {
        guard subscriptions[id] == nil else {
            sendError(HubError(.duplicateId, "subscription id \(id) is still live", data: ["id": .int(Int64(id))]), id: nil, ack: nil)
            return
        }
        let request: SubscribeRequest
        switch check {
        case .invalid(let error):
            sendError(error, id: id, ack: nil)
            return
        case .valid(let valid):
            request = valid
        }
        guard subscriptions.count < configuration.maxSubscriptions else {
            sendError(HubError(.limitExceeded, "at most \(configuration.maxSubscriptions) live subscriptions per connection"), id: id, ack: nil)
            return
        }
        let kind: SubscriptionKind
        let publisher: AnyPublisher<Value, HubError>
        let counters: NameCounters
        var pipeline: String?
        // Whether its buffer slows the subject's publishers down (`overflow: block`): it
        // then takes values only as its connection drains.
        var blocks = false
        do throws(HubError) {
            switch request.target {
            case .name(let name):
                if HubName.isSystem(name) {
                    try checkAdmin(name, "subscribing to '\(name)'")
                    service?.refreshSystemSubjects()
                } else {
                    try permit(.subscribe, name, doing: "subscribe to")
                }
                if case .subject(let subject) = try hub.resolve(name), subject.history != nil {
                    try subscribe(id: id, to: subject, request)
                    return
                }
                let resolved = try hub.publisher(
                    for: name, bufferSize: request.buffer, overflow: request.overflow, memory: budget)
                switch resolved.entry {
                case .subject(let subject):
                    kind = .subject
                    blocks = subject.overflowPolicy(asked: request.overflow) == .block
                case .trigger: kind = .trigger
                case .pipeline:
                    kind = .pipeline
                    pipeline = name
                }
                counters = resolved.entry.counters
                publisher = resolved.publisher
            case .pipeline(let source):
                guard configuration.allowsPipelines else {
                    throw HubError(.forbidden, "this server does not accept ad-hoc pipelines")
                }
                if let allowed = configuration.pipelineTokens, authentication?.identity == Authenticator.bareTokenIdentity,
                   !(auth.token.map(allowed.contains) ?? false) {
                    throw HubError(.forbidden, "this client's token may not subscribe to ad-hoc pipelines")
                }
                let permissions = restrictedPermissions
                if let permissions, !permissions.allowsAny(.pipelines) {
                    throw HubError(
                        .forbidden, "not allowed to send ad-hoc pipelines (no pipelines permission)",
                        data: ["permission": "pipelines"])
                }
                publisher = try hub.compile(
                    pipeline: source, bufferSize: request.buffer, overflow: request.overflow, budget: budget,
                    permissions: permissions)
                kind = .pipeline
                pipeline = "ad-hoc"
                counters = hub.metrics.adHoc
            }
        } catch {
            sendError(error, id: id, ack: nil)
            return
        }
        let remote = RemoteSubscriber(
            id: id, batch: request.batch ?? batchAll, outbound: outbound, subscriptions: subscriptions,
            counters: counters, pipeline: pipeline, origin: hub.origin, paced: blocks)
        subscriptions.insert(remote)
        // A `since` on a name without history: the subscription goes on live from now.
        outbound.send(.subscribed(id: id, kind: kind, recovered: request.since == nil ? nil : false))
        remote.grant(Subscribers.Demand(request.demand))
        publisher.subscribe(remote)
    }

    /// A subscription to a subject with history: its values carry their offsets, and
    /// `subscribed` (with the epoch, the latest offset and, for a `since`, whether it was
    /// recovered) goes out once the replay knows where it starts, which for a durable
    /// subject may be after a read of the store. Meanwhile the id is live: `request`
    /// adds demand and `cancel` ends it (then no `subscribed` is sent).
    func subscribe(id: UInt64, to subject: HubSubject, _ request: SubscribeRequest) throws(HubError) {
        let remote = RemoteSubscriber(
            id: id, batch: request.batch ?? batchAll, outbound: outbound, subscriptions: subscriptions,
            counters: subject.counters, paced: subject.overflowPolicy(asked: request.overflow) == .block)
        let publisher = try hub.historyPublisher(
            for: subject, since: request.since, bufferSize: request.buffer, overflow: request.overflow,
            memory: budget, pacer: outbound
        ) { [outbound, subscriptions] position, recovered in
            guard subscriptions[id] === remote else { return }
            outbound.send(.subscribed(id: id, kind: .subject, history: position, recovered: recovered))
        }
        subscriptions.insert(remote)
        remote.grant(Subscribers.Demand(request.demand))
        publisher.subscribe(OffsetSubscriber(remote))
    }

    func request(id: UInt64, _ check: DemandCheck) {
        guard let remote = subscriptions[id] else { return }
        switch check {
        case .valid(let demand):
            remote.grant(Subscribers.Demand(demand))
        case .invalid(let error):
            subscriptions.remove(id: id)
            remote.cancel()
            sendError(error, id: id, ack: nil)
        }
    }
}
