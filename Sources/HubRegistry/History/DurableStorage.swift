import Logging

/// A durable store for a hub's service to open when it starts: the store's settings, and
/// how to open it.
///
/// The server knows stores only through this protocol and ``SubjectStore``: the module that
/// owns a store conforms (HubSQLite's `SQLiteStorage`), and the executable, or a test,
/// chooses one. ``DurableStorageKind`` lets a broker's configuration file name it.
public protocol DurableStorage: Sendable {
    /// Opens the store (blocking on its disk or network: the broker does not listen yet).
    /// `executor` runs the store's work on the hub's loop; what the store finds while it
    /// opens and starts with all the same (a repaired file, subjects set aside) goes to
    /// `logger`.
    ///
    /// - Throws: what keeps the store from opening; the service does not start.
    func open(executor: any StoreExecutor, logger: Logger) throws -> any SubjectStore
}

/// A kind of durable store that a broker's configuration file can set up in its `storage`
/// section: the keys it reads there, and the ``DurableStorage`` they describe. The
/// configuration reader checks the section's shape and hands its values over; the module
/// that owns the store reads them.
public protocol DurableStorageKind {
    /// The keys a `storage` section may have (`path`, the store's directory, among them).
    static var settingKeys: [String] { get }

    /// The storage that `settings` describe.
    ///
    /// - Throws: ``StorageSettingsError`` naming the key whose value is wrong.
    static func storage(from settings: StorageSettings) throws(StorageSettingsError) -> any DurableStorage
}
