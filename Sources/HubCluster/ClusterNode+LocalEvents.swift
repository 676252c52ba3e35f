import Foundation
import HubEngine
import HubLoop
import HubRegistry
import HubValue
import HubWire
import Logging

/// The hub's local events (on the loop), sent to the other nodes: the node as the hub's
/// HubClusterLink.
extension ClusterNode {
    public func hub(_ hub: Hub, published value: Value, to subject: HubSubject) {
        let bytes = value.jsonBytes()
        publish(to: names.values(subject.name), payload: bytes)
        if subject.kind == .currentValue, let bucket = configuration.currentValueBucket {
            valueGenerations[subject.name, default: 0] &+= 1
            publish(to: "$KV.\(bucket).\(names.currentValueKey(subject.name))", payload: bytes)
        }
    }

    public func hub(_ hub: Hub, finished subject: HubSubject, error: Value?) {
        var headers = [
            ClusterSubjectNames.operationHeader: error == nil ? "complete" : "fail",
            ClusterSubjectNames.nameHeader: subject.name,
        ]
        let payload = error?.jsonBytes() ?? []
        guard let store = jetStreamStore(of: subject) else {
            return publish(to: names.control, payload: payload, headers: headers)
        }
        // The other nodes deliver the stream up to its last value (this node's appends
        // made before the end included), then finish.
        let name = subject.name
        store.lastSequence(subject: name) { [weak self] last in
            guard let self else { return }
            if let last {
                headers[ClusterSubjectNames.throughHeader] = String(last)
            } else {
                logger.warning(
                    "the end of a subject with history goes to the other nodes without its stream's last sequence: their subscribers may end before values they have not fetched yet",
                    metadata: ["subject": "\(name)"])
            }
            publish(to: names.control, payload: payload, headers: headers)
            logger.debug("subject with history finished", metadata: ["subject": "\(name)", "through": "\(last.map(String.init) ?? "?")"])
        }
    }

    public func hub(_ hub: Hub, deleted subject: HubSubject) {
        let name = subject.name
        let headers = [ClusterSubjectNames.operationHeader: "delete", ClusterSubjectNames.nameHeader: name]
        if let store = jetStreamStore(of: subject) {
            // Told after the stream's deletion, so that the others let go of their logs and
            // find the next stream, never the old one.
            store.afterRequestsMadeSoFar { [weak self] in
                guard let self else { return }
                publish(to: names.control, payload: [], headers: headers)
            }
            return
        }
        publish(to: names.control, payload: [], headers: headers)
        if subject.kind == .currentValue, let bucket = configuration.currentValueBucket {
            // The value goes from the bucket too: the subject starts over from its initial value.
            valueGenerations[name, default: 0] &+= 1
            publish(to: "$KV.\(bucket).\(names.currentValueKey(name))", payload: [], headers: ["KV-Operation": "DEL"])
        }
    }

    public func hub(_ hub: Hub, activated trigger: HubTrigger, key: Value?) {
        publish(to: names.activations(trigger.name), payload: key?.jsonBytes() ?? [])
    }

    public func hub(_ hub: Hub, interestMayHaveChangedIn name: String) {
        // Reviewed once the loop's present work is done (a cancel lowers the count after):
        // the hub's scheduler runs it after what the loop has queued.
        guard pendingInterest.insert(name).inserted, pendingInterest.count == 1 else { return }
        hub.scheduler.schedule { [weak self] in
            guard let self else { return }
            let names = self.pendingInterest
            self.pendingInterest = []
            for name in names { self.reviewInterest(in: name) }
            self.broadcastCatalogSoon()
        }
    }

    public func clusterCatalog(merging local: Catalog) -> Catalog {
        remoteCatalogs.merging(local, at: MonotonicClock.nanoseconds())
    }

    /// The JetStream store keeping `subject`'s history, if it has history in one.
    func jetStreamStore(of subject: HubSubject) -> JetStreamStore? {
        guard let history = subject.history else { return nil }
        return (history.isDurable ? hub.durableStore : hub.historyStore) as? JetStreamStore
    }
}
