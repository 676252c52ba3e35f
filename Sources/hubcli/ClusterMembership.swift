import Foundation
import HubCluster
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

    /// The node's name once it has joined.
    var nodeName: String? { lock.withLock { name } }

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
        guard let node = lock.withLock({ self.node.take() }) else { return }
        let bound = LoopBound(node, eventLoop: eventLoop)
        eventLoop.execute { bound.value.stop() }
    }
}

extension Optional {
    /// The value, leaving `nil` behind.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
