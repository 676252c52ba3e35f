import Foundation
import HubEngine
import HubLoop
import HubRegistry
import HubValue
import HubWire
import Logging

/// One hub's membership of a cluster of hubs over NATS.
///
/// - A value sent here to a subject (passthrough or current-value, without history) is
///   published on `hub.v.NAME` (``ClusterSubjectNames``) before the local subscribers get
///   it; the nodes listening deliver it to theirs, once per node whatever their local
///   fan-out. A node listens to `hub.v.NAME` only while it has local subscribers of NAME
///   (interest), and always to its current-value subjects (so that their values agree).
/// - Trigger activations travel likewise on `hub.t.NAME`, with interest.
/// - `complete`, `fail` and `delete` go to every node on `hub.ctl`, after the values sent
///   before them (one connection, one delivery thread: NATS keeps a publisher's order).
/// - The current values of current-value subjects are also written to a JetStream
///   key-value bucket (`hub_current`), which a node reads when it connects or reconnects:
///   a node that was away catches up (when NATS runs with JetStream, `nats-server -js`).
/// - A running pipeline (`run: true`) runs on one node: the holder of its lease in the
///   JetStream bucket `hub_leases`, renewed every second; when the holder dies or loses
///   NATS the lease passes to another node within three seconds.
/// - Each node broadcasts its catalog every ``Configuration/catalogInterval`` (and soon
///   after its interest changes); `list` sums the live nodes' subscriber counts.
///
/// Loop-confined: made, started and used on the hub's event loop; what NATS delivers
/// comes to the loop through a bounded inbox. While NATS is unreachable the node serves
/// its local clients as a lone hub and ``readinessCheck`` reports the problem (`/ready`
/// 503); libnats reconnects and makes the subscriptions again.
public final class ClusterNode: HubClusterLink {
    /// The state of the node's NATS connection.
    public enum ConnectionState: String, Sendable {
        /// Connected (first time).
        case connected
        /// Lost; reconnecting.
        case disconnected
        /// Connected again.
        case reconnected
        /// Closed for good.
        case closed
    }

    /// The configuration it runs with.
    public let configuration: Configuration
    /// The node's NATS subjects.
    public let names: ClusterSubjectNames
    let hub: Hub
    let eventLoop: any LoopExecutor
    let logger: Logger
    var connection: NATSConnection?
    let inbox: ClusterInbox
    let deliverer = ClusterInbox.Deliverer()
    /// The subscriptions for local interest, by route (values or activations of a name).
    var interest: [ClusterRoute: NATSSubscription] = [:]
    var fixedSubscriptions: [NATSSubscription] = []
    var pendingInterest: Set<String> = []
    var remoteCatalogs: ClusterCatalog
    var catalogTimer: (any Cancellable)?
    var catalogSoon: (any Cancellable)?
    var publishFailures = 0
    var isStopped = false
    /// Per current-value subject, how many values it was sent or received (a read of the
    /// bucket that began before the last of them is stale).
    var valueGenerations: [String: UInt64] = [:]
    /// The bucket's binding, made and used on `worker` (blocking requests).
    let keyValue = KeyValueBinding()
    let worker = DispatchQueue(label: "hub.cluster.kv")
    var leases: PipelineLeases?
    var leaseTimer: (any Cancellable)?
    var isRenewing = false
    /// The running pipelines this node holds the lease of (and so runs).
    var heldLeases: Set<String> = []
    /// False once the server turned out to have no JetStream: every node runs its pipelines.
    var placesPipelines = true

    /// A node for `hub` on `eventLoop` (the hub's); nothing connects until ``start()``.
    public init(configuration: Configuration, hub: Hub, eventLoop: any LoopExecutor, logger: Logger) {
        self.configuration = configuration
        names = ClusterSubjectNames(prefix: configuration.subjectPrefix)
        self.hub = hub
        self.eventLoop = eventLoop
        var logger = logger
        logger[metadataKey: "node"] = "\(configuration.nodeName)"
        self.logger = logger
        inbox = ClusterInbox(capacity: configuration.inboxCapacity, eventLoop: eventLoop, deliverer: deliverer)
        remoteCatalogs = ClusterCatalog(
            timeout: configuration.catalogInterval * configuration.forgetAfterIntervals, maxNodes: configuration.maxNodes)
    }

    /// Connects to NATS (without waiting for a server: it keeps trying), becomes the hub's
    /// cluster link and starts broadcasting its catalog. On the loop.
    public func start() throws(NATSError) {
        eventLoop.preconditionInEventLoop()
        deliverer.handle = { [weak self] batch in self?.handle(batch) }
        let inbox = self.inbox
        var options = NATSConnection.Options(urls: configuration.urls, name: configuration.nodeName)
        options.reconnectWait = configuration.reconnectWait
        options.pendingMessages = configuration.inboxCapacity
        options.sendImmediately = configuration.sendImmediately
        let connection = try NATSConnection(
            options: options,
            handlers: .init(
                connected: { inbox.push(.connection(.connected)) },
                disconnected: { inbox.push(.connection(.disconnected)) },
                reconnected: { inbox.push(.connection(.reconnected)) },
                closed: { inbox.push(.connection(.closed)) }),
            logger: logger)
        self.connection = connection
        fixedSubscriptions.append(try connection.subscribe(to: names.control) { inbox.push(.message(.control, $0)) })
        fixedSubscriptions.append(try connection.subscribe(to: names.catalog) { inbox.push(.message(.catalog, $0)) })
        hub.clusterLink = self
        if let bucket = configuration.leaseBucket {
            leases = PipelineLeases(bucket: bucket, ttl: configuration.leaseRenewal * 3, node: configuration.nodeName)
            hub.pipelinePlacement = { [weak self] pipeline in self?.mayRun(pipeline.name) ?? true }
            leaseTimer = hub.scheduler.schedule(
                after: hub.scheduler.now.advanced(by: configuration.leaseRenewal), interval: configuration.leaseRenewal
            ) { [weak self] in self?.renewLeases() }
        }
        // Current-value subjects are listened to always; subjects and triggers with
        // subscribers already (none, at start) by interest.
        for (name, entry) in hub.allEntries {
            if case .subject = entry { reviewInterest(in: name) }
            if case .trigger = entry { reviewInterest(in: name) }
        }
        catalogTimer = hub.scheduler.schedule(
            after: hub.scheduler.now.advanced(by: configuration.catalogInterval), interval: configuration.catalogInterval
        ) { [weak self] in
            self?.reviewFollowing()
            self?.broadcastCatalog()
        }
        broadcastCatalog()
        logger.info("cluster node started", metadata: [
            "nats": "\(configuration.urls.joined(separator: ","))", "connected": "\(connection.isConnected)",
        ])
    }

    /// Leaves the cluster: no more broadcasts, subscriptions or forwarding; closes NATS.
    public func stop() {
        guard !isStopped else { return }
        isStopped = true
        catalogTimer?.cancel()
        catalogSoon?.cancel()
        leaseTimer?.cancel()
        if hub.clusterLink === self { hub.clusterLink = nil }
        for subscription in interest.values { subscription.unsubscribe() }
        interest = [:]
        fixedSubscriptions.forEach { $0.unsubscribe() }
        fixedSubscriptions = []
        connection?.close()
    }

    /// Whether the node is connected to NATS now (any thread).
    public var isConnected: Bool { connection?.isConnected ?? false }

    /// A readiness check for ``HubService/addReadinessCheck(named:_:)``: the problem while
    /// NATS is unreachable, `nil` while connected. Callable from any thread.
    public var readinessCheck: @Sendable () -> String? {
        let connection = self.connection
        return { connection?.isConnected == true ? nil : "not connected to NATS" }
    }

    /// How many values from other nodes were dropped because this node's loop was behind.
    public var droppedFromCluster: Int { inbox.dropped }

    /// The names of the other nodes heard from recently, sorted.
    public var liveNodes: [String] { remoteCatalogs.liveNodes(at: MonotonicClock.nanoseconds()) }
}
