import Foundation
import HubCluster
import HubLoop
import HubRegistry
import HubServer
import HubTransport
import Logging

/// `serve`'s cluster node: made and started on the service's loop when the service
/// starts, checked by `/ready` (on the loop), left when the broker stops.
final class ClusterMembership: @unchecked Sendable {
    private let lock = NSLock()
    private var node: ClusterNode?
    private var check: (@Sendable () -> String?)?
    private var name: String?
    private var storeConnection: NATSConnection?

    /// The node's name once it has joined.
    var nodeName: String? { lock.withLock { name } }

    /// In a cluster, subjects with history and durable subjects keep it in JetStream
    /// (``JetStreamStore``: memory streams for history, file streams for durable ones),
    /// over a NATS connection of their own: set on `hub` before its subjects are
    /// declared. Blocks until NATS answers (the broker does not listen yet).
    func openStores(_ settings: ClusterSettings, hub: Hub, eventLoop: EventLoop, logger: Logger) throws {
        let nodeName = settings.node ?? ClusterSettings.defaultNodeName()
        var options = NATSConnection.Options(urls: settings.urls, name: nodeName + ".store")
        // Each group of appends is written at once (see JetStreamStore.init).
        options.sendImmediately = true
        let connection = try NATSConnection(options: options, logger: logger)
        let executor = LoopStoreExecutor(eventLoop: eventLoop)
        hub.durableStore?.close()
        hub.historyStore = try JetStreamStore(connection: connection, storage: .memory, executor: executor, logger: logger)
        hub.durableStore = try JetStreamStore(connection: connection, storage: .file, executor: executor, logger: logger)
        lock.withLock { storeConnection = connection }
    }

    /// Makes the node for `hub` and starts it (on the loop).
    func join(_ settings: ClusterSettings, hub: Hub, eventLoop: EventLoop, logger: Logger) throws {
        let nodeName = settings.node ?? ClusterSettings.defaultNodeName()
        var configuration = ClusterNode.Configuration(urls: settings.urls, nodeName: nodeName)
        configuration.sendImmediately = settings.sendImmediately
        let node = ClusterNode(configuration: configuration, hub: hub, eventLoop: eventLoop, logger: logger)
        try node.start()
        lock.withLock {
            self.node = node
            check = node.readinessCheck
            name = nodeName
        }
    }

    /// Why the broker is not ready as a member of its cluster, or `nil`.
    func problem() -> String? {
        guard let check = lock.withLock({ check }) else { return "joining the cluster" }
        return check()
    }

    /// The node's figures for `/metrics` (on the loop): whether it is connected to NATS,
    /// how many other nodes it hears, and the values from other nodes it dropped because
    /// its loop was behind.
    func metrics() -> [MetricSample] {
        guard let node = lock.withLock({ node }) else {
            return [MetricSample("hub_cluster_connected", 0, kind: .gauge)]
        }
        return [
            MetricSample("hub_cluster_connected", node.isConnected ? 1 : 0, kind: .gauge),
            MetricSample("hub_cluster_nodes", Double(node.liveNodes.count + 1), kind: .gauge),
            MetricSample("hub_cluster_dropped_total", Double(node.droppedFromCluster), kind: .counter),
        ]
    }

    /// Leaves the cluster (closes NATS) if the loop still runs.
    func leave(_ eventLoop: EventLoop) {
        let connection = lock.withLock { storeConnection.take() }
        guard let node = lock.withLock({ self.node.take() }) else {
            connection?.close()
            return
        }
        let bound = LoopBound(node, eventLoop: eventLoop)
        eventLoop.execute {
            bound.value.stop()
            connection?.close()
        }
    }
}
