import Foundation
import HubEngine
import HubLoop
import HubRegistry
import HubValue
import HubWire
import Logging

/// What this node publishes to NATS: values, activations, control messages, its catalog.
extension ClusterNode {
    func publish(to subject: String, payload: [UInt8], headers: [String: String] = [:]) {
        guard !isStopped, let connection else { return }
        var headers = headers
        headers[ClusterSubjectNames.originHeader] = configuration.nodeName
        do {
            try connection.publish(to: subject, payload: payload, headers: headers)
        } catch {
            // Not connected and the reconnect buffer is full: the value stays local.
            publishFailures += 1
            if publishFailures == 1 || publishFailures.isMultiple(of: 1000) {
                logger.warning("cannot publish to the cluster", metadata: [
                    "subject": "\(subject)", "error": "\(error)", "failures": "\(publishFailures)",
                ])
            }
        }
    }

    /// This node's catalog (at most ``Configuration/maxCatalogEntries`` names) to every node.
    func broadcastCatalog() {
        guard !isStopped else { return }
        remoteCatalogs.forgetStale(at: MonotonicClock.nanoseconds())
        var catalog = hub.localCatalog()
        let limit = configuration.maxCatalogEntries
        if catalog.subjects.count + catalog.pipelines.count + catalog.triggers.count > limit {
            catalog.subjects = Array(catalog.subjects.prefix(limit))
            catalog.pipelines = Array(catalog.pipelines.prefix(max(0, limit - catalog.subjects.count)))
            catalog.triggers = Array(catalog.triggers.prefix(max(0, limit - catalog.subjects.count - catalog.pipelines.count)))
        }
        catalog.connections = nil
        var bytes = ServerMessage.catalog(ack: 0, catalog).jsonBytes()
        if bytes.count > configuration.maxCatalogBytes {
            // Current values are what makes a catalog big: the others' lists do without them.
            for index in catalog.subjects.indices { catalog.subjects[index].value = nil }
            bytes = ServerMessage.catalog(ack: 0, catalog).jsonBytes()
            while bytes.count > configuration.maxCatalogBytes, !catalog.subjects.isEmpty {
                catalog.subjects.removeLast(max(1, catalog.subjects.count / 2))
                bytes = ServerMessage.catalog(ack: 0, catalog).jsonBytes()
            }
        }
        publish(to: names.catalog, payload: bytes)
    }

    /// A catalog broadcast in a moment, several changes of interest sharing it.
    func broadcastCatalogSoon() {
        guard catalogSoon == nil else { return }
        catalogSoon = hub.scheduler.schedule(after: hub.scheduler.now.advanced(by: .milliseconds(20))) { [weak self] in
            self?.catalogSoon = nil
            self?.broadcastCatalog()
        }
    }
}
