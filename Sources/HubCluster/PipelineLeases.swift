import Foundation

/// Which running pipelines (`run: true`) this node holds the lease of, in the JetStream
/// key-value bucket of leases: one node of the cluster runs each.
///
/// A lease is a key (the pipeline's name) holding the node's name; the bucket forgets a
/// key ``ttl`` after its last write, so that the lease of a node that died or lost NATS
/// passes to another after at most that long. The holder renews each of its leases
/// every renewal (a write at its last revision); a node without a lease tries to create
/// the key. Blocking requests: used only on the node's worker queue.
final class PipelineLeases: @unchecked Sendable {
    /// What a renewal found.
    enum Outcome: Sendable {
        /// The leases this node holds now.
        case held(Set<String>)
        /// The server has no JetStream: no placement, every node runs its pipelines.
        case unavailable(String)
        /// A request failed (NATS lost): keep things as they are.
        case failed(String)
    }

    let bucket: String
    let ttl: Duration
    private let node: [UInt8]
    private var store: NATSKeyValue?
    private var revisions: [String: UInt64] = [:]

    init(bucket: String, ttl: Duration, node: String) {
        self.bucket = bucket
        self.ttl = ttl
        self.node = Array(node.utf8)
    }

    /// Renews the leases held among `names` and tries to take the others.
    func renew(_ names: [String], over connection: NATSConnection) -> Outcome {
        guard connection.isConnected else { return .failed("not connected to NATS") }
        let store: NATSKeyValue
        do {
            if let bound = self.store {
                store = bound
            } else {
                store = try NATSKeyValue(connection: connection, bucket: bucket, maxValueBytes: 256, ttl: ttl)
                self.store = store
            }
        } catch {
            // Without JetStream nobody answers its API; anything else may pass.
            let text = "\(error)".lowercased()
            if text.contains("no responders") || text.contains("not enabled") { return .unavailable("\(error)") }
            return .failed("\(error)")
        }
        var held: Set<String> = []
        do {
            for name in names {
                if let last = revisions[name] {
                    if let revision = try store.update(name, node, last: last) {
                        revisions[name] = revision
                        held.insert(name)
                        continue
                    }
                    revisions[name] = nil
                }
                if let revision = try store.create(name, node) {
                    revisions[name] = revision
                    held.insert(name)
                }
            }
        } catch {
            return .failed("\(error)")
        }
        revisions = revisions.filter { names.contains($0.key) }
        return .held(held)
    }
}
