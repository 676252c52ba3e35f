import HubRegistry
import Logging

/// Durable subjects in an SQLite database (WAL) in a directory: the ``DurableStorage`` a
/// broker's service opens as an ``SQLiteStore``, and the kind its configuration file's
/// `storage` section describes (`path`, `sync`, `shared`, `onCorruption`).
public struct SQLiteStorage: DurableStorage, DurableStorageKind, Hashable {
    /// The directory of the database (created if missing).
    public var path: String
    /// When a durable value counts as stored (its `ack`): see ``SQLiteStore/Sync``.
    public var sync: SQLiteStore.Sync
    /// Whether other processes may open the database while the broker runs: see
    /// ``SQLiteStore/init(directory:sync:executor:clock:maxPendingBytes:checkpoint:commitOnLoop:loopCommitBudget:shared:onCorruption:faults:)``.
    public var shared: Bool
    /// What the broker does when the checks at start find the database damaged: refuse
    /// to start (the default), or set the damaged subjects' history aside.
    public var onCorruption: SQLiteStore.CorruptionPolicy
    /// Disk faults to inject, for tests (`hubcli serve` reads them from
    /// ``SQLiteStore/FaultInjection/environmentVariable``); `nil` in production.
    public var faults: SQLiteStore.FaultInjection?

    /// Storage in `path` with the sync policy `sync` (default: fsync at each group commit),
    /// kept to the broker unless `shared`, refusing a damaged database unless
    /// `onCorruption` says otherwise.
    public init(
        path: String, sync: SQLiteStore.Sync = .full, shared: Bool = false,
        onCorruption: SQLiteStore.CorruptionPolicy = .refuse, faults: SQLiteStore.FaultInjection? = nil
    ) {
        self.path = path
        self.sync = sync
        self.shared = shared
        self.onCorruption = onCorruption
        self.faults = faults
    }

    /// The keys of a `storage` section.
    public static let settingKeys = ["path", "sync", "shared", "onCorruption"]

    /// The storage a `storage` section describes; absent keys take their defaults.
    public static func storage(from settings: StorageSettings) throws(StorageSettingsError) -> any DurableStorage {
        SQLiteStorage(
            path: settings.path,
            sync: try settings.choice("sync", SQLiteStore.Sync.self) ?? .full,
            shared: try settings.bool("shared") ?? false,
            onCorruption: try settings.choice("onCorruption", SQLiteStore.CorruptionPolicy.self) ?? .refuse)
    }

    /// Opens the database, checking it first; logs what the checks found and repaired.
    public func open(executor: any StoreExecutor, logger: Logger) throws -> any SubjectStore {
        let store = try SQLiteStore(
            directory: path, sync: sync, executor: executor, shared: shared, onCorruption: onCorruption,
            faults: faults)
        for notice in store.integrityNotices {
            logger.warning("durable store check", metadata: ["path": "\(store.path)", "found": "\(notice)"])
        }
        if !store.quarantined.isEmpty {
            logger.error(
                "durable subjects set aside: their history was damaged; they start over under a new epoch",
                metadata: ["subjects": "\(store.quarantined.joined(separator: ", "))"])
        }
        if faults != nil { logger.warning("durable store: disk faults are injected (tests only)") }
        logger.info(
            "durable store open", metadata: ["path": "\(store.path)", "sync": "\(sync.rawValue)", "shared": "\(shared)"])
        return store
    }
}
