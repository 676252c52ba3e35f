import Foundation
import HubEngine
import HubRegistry
import HubSQLite
import HubTransport
import HubValue
import HubWire
import Logging

/// The durable store the service opens for its hub.
extension ServiceCore {
    /// Opens the durable store of ``HubService/Configuration/storage`` (blocking on the
    /// disk: the broker does not listen yet) and gives it to the hub.
    func openStorage() throws {
        guard let storage = configuration.storage, hub.durableStore == nil else { return }
        let store = try SQLiteStore(
            directory: storage.path, sync: storage.sync, executor: LoopStoreExecutor(eventLoop: eventLoop),
            shared: storage.shared, onCorruption: storage.onCorruption, faults: storage.faults)
        hub.durableStore = store
        for notice in store.integrityNotices {
            logger.warning("durable store check", metadata: ["path": "\(store.path)", "found": "\(notice)"])
        }
        if !store.quarantined.isEmpty {
            logger.error(
                "durable subjects set aside: their history was damaged; they start over under a new epoch",
                metadata: ["subjects": "\(store.quarantined.joined(separator: ", "))"])
        }
        if storage.faults != nil { logger.warning("durable store: disk faults are injected (tests only)") }
        // Not ready while the disk refuses the store's commits; each look tries the disk again
        // (at most once a second). Checks run on this loop, the store's.
        let unavailable = LoopBound(store, eventLoop: eventLoop)
        readinessChecks.append(("durable store", {
            unavailable.value.probeIfUnavailable()
            return unavailable.value.unavailableReason
        }))
        logger.info(
            "durable store open",
            metadata: ["path": "\(store.path)", "sync": "\(storage.sync.rawValue)", "shared": "\(storage.shared)"])
    }

    /// Closes the durable store once nothing appends any more.
    func closeStorage() {
        hub.durableStore?.close()
    }
}
