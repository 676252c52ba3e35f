import HubLoop
import HubRegistry
import HubTransport

/// The durable store the service opens for its hub.
extension ServiceCore {
    /// Opens the durable store of ``HubService/Configuration/storage`` (blocking on the
    /// disk: the broker does not listen yet) and gives it to the hub.
    func openStorage() throws {
        guard let storage = configuration.storage, hub.durableStore == nil else { return }
        let store = try storage.open(executor: LoopStoreExecutor(eventLoop: eventLoop), logger: logger)
        hub.durableStore = store
        // Not ready while the store cannot store (its disk refuses commits). Checks run on
        // this loop, the store's.
        let checked = LoopBound(store, eventLoop: eventLoop)
        readinessChecks.append(("durable store", { checked.value.unavailability() }))
    }

    /// Closes the durable store once nothing appends any more.
    func closeStorage() {
        hub.durableStore?.close()
    }
}
