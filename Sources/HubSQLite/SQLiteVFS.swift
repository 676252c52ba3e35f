import CSQLite
import CSQLiteVFS
import Foundation

/// The SQLite VFS a store opens its database through: the page-checksum shim (see
/// `Sources/CSQLiteVFS`) over `unix-excl` (a store that keeps its database to itself) or
/// `unix` (`shared`), with the fault-injecting shim between them when the store is given
/// ``SQLiteStore/FaultInjection`` (tests only). Registered on first use, in C, at run time.
enum SQLiteVFS {
    /// The name of the VFS for a store, registering it first.
    static func name(shared: Bool, faults: SQLiteStore.FaultInjection?) throws(SQLiteError) -> String {
        let base = shared ? "unix" : SQLiteStore.exclusiveVFS
        var below = base
        // A boot id alone needs no fault VFS (and must not reconfigure another store's faults).
        if let faults, faults.cutAfter > 0 || faults.controlFile != nil {
            below = "hub-faults/\(base)"
            try check(hub_fault_vfs_register(below, base), registering: below)
            hub_fault_configure(faults.cutAfter, faults.seed, faults.controlFile)
        }
        let name = "hub-checksum/\(below)"
        try check(hub_checksum_vfs_register(name, below), registering: name)
        return name
    }

    private static func check(_ status: Int32, registering name: String) throws(SQLiteError) {
        guard status == SQLITE_OK else {
            throw SQLiteError(code: status, message: "cannot register the SQLite VFS \(name)")
        }
    }
}

extension SQLiteStore {
    /// Faults the store's disk suffers, for tests (``SQLiteStore/init(directory:sync:executor:clock:maxPendingBytes:checkpoint:commitOnLoop:loopCommitBudget:shared:onCorruption:faults:)``):
    /// a power cut at the `cutAfter`-th write or sync of the database or its WAL, after
    /// which the process is gone, and the faults a control file asks for while it runs.
    /// Process-wide: the last store opened with faults sets them.
    public struct FaultInjection: Sendable, Hashable {
        /// The environment variable `hubcli serve` reads them from:
        /// `cut=N,seed=S,control=PATH,boot=ID`, each part optional.
        public static let environmentVariable = "HUB_TEST_STORAGE_FAULTS"

        /// The write or sync (counted from 1, database and WAL together) at which the
        /// power goes: what was written since each file's last sync is kept, lost or torn,
        /// sector by sector, and the process kills itself with SIGKILL. 0: never.
        public var cutAfter: Int64
        /// Seeds the choices of the cut (what is kept), so that a run can be repeated.
        public var seed: UInt64
        /// A file read again whenever it changes, one fault a line: `full` (writes fail
        /// as on a full disk), `eio` (writes and syncs fail with an I/O error), `eio-read`,
        /// `stall-sync=MS`, `stall-write=MS`. Empty or missing: no fault.
        public var controlFile: String?
        /// The machine's boot, as the store reads it (`nil`: the real one): a new one after
        /// a power cut is a machine that restarted.
        public var bootID: String?

        /// Faults as given.
        public init(cutAfter: Int64 = 0, seed: UInt64 = 0, controlFile: String? = nil, bootID: String? = nil) {
            self.cutAfter = cutAfter
            self.seed = seed
            self.controlFile = controlFile
            self.bootID = bootID
        }

        /// Faults from `cut=N,seed=S,control=PATH,boot=ID`; `nil` when a part is not understood.
        public init?(parsing text: String) {
            self.init()
            for part in text.split(separator: ",") {
                let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else { return nil }
                switch pair[0] {
                case "cut":
                    guard let value = Int64(pair[1]), value >= 0 else { return nil }
                    cutAfter = value
                case "seed":
                    guard let value = UInt64(pair[1]) else { return nil }
                    seed = value
                case "control":
                    controlFile = pair[1]
                case "boot":
                    bootID = pair[1]
                default:
                    return nil
                }
            }
        }
    }

    /// What the store does when it finds its database damaged as it opens.
    public enum CorruptionPolicy: String, Sendable, CaseIterable {
        /// Refuses to open, naming the file, what is damaged and the subjects it holds.
        case refuse
        /// Copies the damaged files aside, then opens a database rebuilt from everything
        /// still readable: the subjects whose history is damaged start over, empty, under
        /// a new epoch (resuming subscribers get `recovered: false`).
        case quarantine
    }

    /// The VFS another connection of this process opens a store's database through (the
    /// `sqlite3_open_v2` name), so that the pages it writes carry their checksums: a
    /// database written to without it (by the `sqlite3` shell, say) has pages the store
    /// then finds damaged. Reading without it is harmless.
    public static let checksummingVFS: String = (try? SQLiteVFS.name(shared: true, faults: nil)) ?? "unix"

    /// How many writes and syncs of the database and WAL went through the fault shim in
    /// this process (to pick a cut point for a later run).
    public static var faultOperations: Int64 { hub_fault_operations() }
}
