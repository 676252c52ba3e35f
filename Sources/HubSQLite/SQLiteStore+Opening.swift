import CSQLite
import CSQLiteVFS
import DequeModule
import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire

/// What opening a store checks and records: the lock, the page format, the migration of
/// older databases, and the runs (this boot's, and machines that stopped during one).
extension SQLiteStore {
    /// Takes and drops the write lock once, so that a database another process keeps
    /// locked is refused at once with what to do, rather than by whichever statement
    /// meets the lock first. Kept to the store (not `shared`), the database must not be
    /// open anywhere else; shared, no other process may be writing to it.
    static func checkNotLockedElsewhere(_ connection: SQLiteConnection, shared: Bool) throws(SQLiteError) {
        do throws(SQLiteError) {
            try connection.execute("BEGIN IMMEDIATE; ROLLBACK")
        } catch where error.code & 0xFF == SQLITE_BUSY {
            let reason = shared
                ? "another process is writing to the database"
                : "another process has the database open, and the broker keeps it to itself while it runs"
                    + " (storage.shared: true lets other processes in)"
            throw SQLiteError(code: error.code, message: "cannot open \(connection.path): \(reason)")
        }
    }

    /// The reserved bytes a page of the database at `path` keeps (its header's byte 20).
    static func reservedBytes(_ path: String) -> Int? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 100), header.count == 100 else { return nil }
        return Int(header[header.startIndex + 20])
    }

    /// Moves the `entries` of a version 1 or 2 database to version 3's keys (see
    /// ``SQLiteSchema``), all or nothing; refuses one whose ids or offsets do not fit them.
    static func migrateEntries(_ connection: SQLiteConnection, path: String) throws(SQLiteError) {
        let outOfRange = try connection.prepare(SQLiteSchema.outOfRange)
        let outside = try outOfRange.step() ? outOfRange.int64(0) : 0
        outOfRange.reset()
        if outside > 0 {
            throw SQLiteError(
                code: -1,
                message: "\(path) holds subject ids above \(SQLiteSchema.maxSubjectID) or offsets above \(SQLiteSchema.maxOffset), "
                    + "which schema version \(SQLiteSchema.version) cannot key")
        }
        do throws(SQLiteError) {
            try connection.execute(SQLiteSchema.migrateEntries)
        } catch {
            try? connection.execute("ROLLBACK")
            throw SQLiteError(code: error.code, message: "\(path): moving the history to schema version \(SQLiteSchema.version) failed: \(error.message)")
        }
    }

    /// This boot of the machine (Linux's `boot_id`), `nil` where unknown.
    static func currentBootID() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else { return nil }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty ? nil : id
    }

    /// Records, synced, that the store is open on this boot with `sync`. When the previous
    /// run was open with `sync: normal` on another boot and never closed, the machine
    /// stopped under it (a power loss, a kernel crash): values acknowledged since the last
    /// checkpoint may be gone, and new values would take their offsets under the same
    /// epoch. Every subject then begins a new epoch, so that a resuming subscriber is told
    /// (`recovered: false`) instead of silently reading other values at offsets it had
    /// seen; returns what to log.
    static func markOpen(_ connection: SQLiteConnection, bootID: String?, sync: Sync) throws(SQLiteError) -> String? {
        var previous: [Substring] = []
        let read = try connection.prepare("SELECT value FROM meta WHERE key = 'run'")
        if try read.step(), let text = read.text(0) { previous = text.split(separator: " ") }
        read.reset()
        var notice: String?
        if let bootID, previous.count == 3, previous[1] == "open", previous[2] == Sync.normal.rawValue,
            previous[0] != Substring(bootID)
        {
            var ids: [Int64] = []
            let list = try connection.prepare("SELECT id FROM subjects")
            while try list.step() { ids.append(list.int64(0)) }
            list.reset()
            let renew = try connection.prepare("UPDATE subjects SET epoch = ?2 WHERE id = ?1")
            for id in ids {
                renew.bind(1, id)
                renew.bind(2, MemoryStore.newEpoch())
                try renew.run()
            }
            notice = "the machine stopped while the store was open with storage.sync: normal: values acknowledged "
                + "since its last checkpoint may be lost, so every durable subject (\(ids.count)) begins a new epoch"
        }
        try connection.execute("PRAGMA synchronous = FULL")
        let mark = try connection.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('run', ?1)")
        mark.bind(1, "\(bootID ?? "-") open \(sync.rawValue)")
        try mark.run()
        try connection.execute("PRAGMA synchronous = \(sync == .full ? "FULL" : "NORMAL")")
        return notice
    }

    /// Records that the store closed cleanly (best effort: a store that cannot write
    /// now is treated as one that stopped).
    static func markClosed(path: String, vfs: String) {
        guard let connection = try? SQLiteConnection(path: path, vfs: vfs) else { return }
        defer { connection.close() }
        try? connection.execute("PRAGMA synchronous = FULL")
        try? connection.execute("UPDATE meta SET value = replace(value, ' open ', ' closed ') WHERE key = 'run'")
    }
}
