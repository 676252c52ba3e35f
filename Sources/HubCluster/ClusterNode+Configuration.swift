import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire
import Logging

extension ClusterNode {
    /// How a node joins its cluster.
    public struct Configuration: Sendable {
        /// The NATS servers (`nats://HOST:PORT`).
        public var urls: [String]
        /// This node's name, unique in the cluster.
        public var nodeName: String
        /// The prefix of the NATS subjects.
        public var subjectPrefix = "hub"
        /// How often the node broadcasts its catalog.
        public var catalogInterval: Duration = .seconds(1)
        /// After how many catalog intervals without news another node is forgotten.
        public var forgetAfterIntervals = 3
        /// How many other nodes' catalogs are kept.
        public var maxNodes = 256
        /// How many names a broadcast catalog holds at most (the first, by name).
        public var maxCatalogEntries = 5000
        /// How many bytes a broadcast catalog may take (NATS's default maximum payload is
        /// 1 MiB): beyond it current values are left out, then names.
        public var maxCatalogBytes = 512 << 10
        /// How many messages from NATS may wait for the loop before values are dropped.
        public var inboxCapacity = 65_536
        /// How long to wait between reconnect attempts.
        public var reconnectWait: Duration = .milliseconds(250)
        /// Whether what the node publishes is written to NATS by the loop at once (one
        /// system call per value, about a millisecond less latency) instead of by libnats's
        /// flusher thread, which batches (the default: the loop does no socket writes).
        public var sendImmediately = false
        /// The JetStream key-value bucket that keeps the current values of current-value
        /// subjects (read when the node connects or reconnects); `nil`, or a NATS without
        /// JetStream: current values travel only as they are sent.
        public var currentValueBucket: String? = "hub_current"
        /// The largest current value the bucket keeps.
        public var maxCurrentValueBytes = 1 << 20
        /// The JetStream key-value bucket of the running pipelines' leases (`run: true`:
        /// one node runs each); `nil`, or a NATS without JetStream: every node runs them.
        public var leaseBucket: String? = "hub_leases"
        /// How often a node renews its leases and tries to take the free ones; a lease
        /// not renewed for three of these passes to another node.
        public var leaseRenewal: Duration = .seconds(1)

        /// A node named `nodeName` of the cluster behind `urls`.
        public init(urls: [String], nodeName: String) {
            self.urls = urls
            self.nodeName = nodeName
        }
    }
}
