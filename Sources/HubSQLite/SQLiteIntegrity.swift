import CSQLite
import CSQLiteVFS
import Foundation
import HubRegistry
import HubValue

/// The checks a store runs on its database before it serves it, and what it does about
/// damage (``SQLiteStore/CorruptionPolicy``).
///
/// 1. **The WAL**, read before SQLite opens it (``hub_wal_scan``): SQLite's recovery keeps
///    the frames up to the first one that fails its checksum and drops the rest without a
///    word. A crash leaves at most the last, unfinished transaction behind such a frame;
///    intact frames *and a later transaction* behind it mean that a frame written and
///    synced before them was damaged since: transactions that were acknowledged would be
///    dropped. With `sync: normal` commits are not synced one by one, so a power cut can
///    leave the same picture; there it is reported, not refused.
/// 2. **The database file**, once the WAL is copied into it: every page's checksum (the
///    checksum shim's 8 reserved bytes), its length against the page count its header
///    gives, and `PRAGMA quick_check` (the b-trees' structure; on its own for a database
///    without checksums).
/// 3. **The subjects** of a damaged database: each subject's history is read through, so
///    that the error names those whose values are damaged or lost.
///
/// Refused, nothing is changed. Quarantined, the files are first copied into a
/// `quarantine-DATE` folder beside them, then the database is rebuilt from what is
/// readable: the damaged subjects start over under a new epoch, the others keep their
/// history, epoch and offsets.
enum SQLiteIntegrity {
    /// What the check found and did.
    struct Outcome {
        /// What to log (damage found, what was set aside, where the copies are).
        var notices: [String] = []
        /// The subjects whose history was set aside under a new epoch.
        var quarantined: [String] = []
    }

    /// A damaged database, or the WAL's damage, as found.
    private struct Damage {
        var findings: [String] = []
        var walDamaged = false
        var droppedKeys: [Int64] = []
    }

    /// Smallest key of an entry (subject 1, offset 0), to tell entries' pages from others.
    private static let minimumEntryKey: Int64 = 1 << Int64(SQLiteSchema.offsetBits)

    /// Checks the database at `path` (if there is one) and applies `policy` to damage.
    ///
    /// `sameBoot`: the previous run was on this boot of the machine, so no power cut came
    /// between (a process that dies leaves its WAL's frames in order, the last one at most
    /// unfinished): then a damaged frame that any intact commit follows is damage.
    static func check(
        path: String, vfs: String, sync: SQLiteStore.Sync, policy: SQLiteStore.CorruptionPolicy, sameBoot: Bool = false
    ) throws(SQLiteError) -> Outcome {
        var outcome = Outcome()
        guard let size = fileSize(path), size > 0 else { return outcome }
        var damage = Damage()
        let wal = path + "-wal"
        if let walSize = fileSize(wal), walSize >= 32 {
            var report = hub_wal_report()
            var keys = [Int64](repeating: 0, count: 1 << 16)
            var found: Int32 = 0
            let status = hub_wal_scan(wal, &report, minimumEntryKey, &keys, Int32(keys.count), &found)
            if status == 0 {
                let brokenHeader = report.header_valid == 0 && report.dropped_intact_frames > 0
                let afterSameBoot = sameBoot && report.intact_commit_after != 0
                if report.first_bad_frame >= 0, report.damaged != 0 || afterSameBoot || (brokenHeader && sync == .full) {
                    let what = brokenHeader
                        ? "its header is damaged, and \(report.dropped_intact_frames) intact frames follow it"
                        : "frame \(report.first_bad_frame + 1) of \(report.frames) is damaged, and \(report.dropped_intact_frames) intact frames (a later commit) follow it"
                    if sync == .full || afterSameBoot {
                        damage.findings.append("\(wal): \(what)")
                        damage.walDamaged = true
                        damage.droppedKeys = Array(keys.prefix(Int(min(found, Int32(keys.count)))))
                    } else {
                        outcome.notices.append(
                            "\(wal): \(what): commits after frame \(report.first_bad_frame + 1) are dropped (with storage.sync: normal a power cut can leave this; with sync: full it is damage)")
                    }
                } else if report.first_bad_frame >= 0, report.dropped_intact_frames > 0 || found > 0 {
                    outcome.notices.append(
                        "\(wal): the last transaction was not complete (a crash during its commit) and is dropped, as SQLite does")
                }
            }
        }
        let connection = try SQLiteConnection(path: path, vfs: vfs)
        defer { connection.close() }
        // A file shorter than its header says is refused at the first read unless the schema
        // is "writable": then SQLite reads what there is, and the checks below say what is missing.
        try? connection.execute("PRAGMA writable_schema = ON")
        do throws(SQLiteError) {
            try connection.execute("BEGIN IMMEDIATE; ROLLBACK")
        } catch where error.code & 0xFF == SQLITE_BUSY {
            // Another process holds it: the store's own open says so (or, shared, goes on).
            outcome.notices.append("\(path): not checked at open: another process is writing to it")
            return outcome
        } catch {
            damage.findings.append("\(path): cannot be read: \(error.storageProblem ?? error.description)")
        }
        if damage.walDamaged {
            // Nothing may change before the decision: recovery reads the WAL (and builds
            // the shared-memory index), and closing must not copy it in and delete it.
            _ = hub_sqlite_keep_wal_on_close(UnsafeMutableRawPointer(connection.handle))
            try connection.execute("PRAGMA query_only = 1")
        } else {
            damage.findings += try checkDatabase(connection, path: path)
        }
        guard !damage.findings.isEmpty else { return outcome }

        let subjects = try readSubjects(connection, path: path, findings: damage.findings)
        var damaged: [Int64: String] = [:]
        for subject in subjects.values {
            if let reason = readThrough(connection, subject: subject.id) { damaged[subject.id] = reason }
        }
        if !damage.droppedKeys.isEmpty {
            let exists = try connection.prepare("SELECT 1 FROM entries WHERE key = ?1")
            for key in damage.droppedKeys {
                exists.bind(1, key)
                let present = (try? exists.step()) ?? false
                exists.reset()
                guard !present else { continue }
                let id = key >> Int64(SQLiteSchema.offsetBits)
                let offset = key & Int64(SQLiteSchema.maxOffset)
                guard subjects[id] != nil else { continue }
                let reason = "values up to offset \(offset) are in the damaged part of the WAL"
                if damaged[id] == nil { damaged[id] = reason }
            }
        }
        let names = damaged.keys.compactMap { subjects[$0]?.name }.sorted()
        let described = damage.findings.joined(separator: "; ")
        let affected = names.isEmpty
            ? "no subject's history is affected"
            : "the history of \(names.map { "'\($0)'" }.joined(separator: ", ")) is damaged ("
                + damaged.sorted { $0.key < $1.key }.compactMap { id, reason in subjects[id].map { "\($0.name): \(reason)" } }
                    .joined(separator: "; ") + ")"
        switch policy {
        case .refuse:
            throw SQLiteError(
                code: SQLITE_CORRUPT,
                message: "the durable store is damaged: \(described); \(affected). Nothing was changed. "
                    + "storage.onCorruption: quarantine starts with the damaged subjects' history set aside "
                    + "under a new epoch (the files are copied aside first); or restore the storage directory from a backup")
        case .quarantine:
            let folder = try copyAside(path: path, report: "\(described)\n\(affected)\n")
            try rebuild(connection, path: path, vfs: vfs, subjects: subjects, damaged: Set(damaged.keys))
            outcome.quarantined = names
            outcome.notices.append(
                "the durable store was damaged: \(described); \(affected). The damaged files are copied to \(folder); "
                    + (names.isEmpty ? "the database was rebuilt from them" : "those subjects start over under a new epoch"))
            return outcome
        }
    }

    // MARK: The database file

    /// The WAL copied in, then the pages' checksums, the file's length and the b-trees.
    private static func checkDatabase(_ connection: SQLiteConnection, path: String) throws(SQLiteError) -> [String] {
        var findings: [String] = []
        var walCopied = true
        do throws(SQLiteError) {
            // Returns (busy, log, checkpointed): busy when another process reads an older snapshot.
            let checkpoint = try connection.prepare("PRAGMA wal_checkpoint(TRUNCATE)")
            if try checkpoint.step(), checkpoint.int64(0) != 0 { walCopied = false }
            checkpoint.reset()
        } catch where error.code & 0xFF == SQLITE_BUSY || error.code & 0xFF == SQLITE_LOCKED {
            walCopied = false
        } catch {
            findings.append("\(path): the WAL cannot be copied into it: \(error.storageProblem ?? error.description)")
        }
        // Pages the WAL still holds newer copies of may be half-written: the file's pages are
        // checked only once the WAL is in it (quick_check reads the current pages either way).
        if walCopied { findings += scanPages(path: path) }
        do throws(SQLiteError) {
            let check = try connection.prepare("PRAGMA quick_check(20)")
            var problems: [String] = []
            while try check.step() {
                if let line = check.text(0), line != "ok" { problems.append(line) }
            }
            check.reset()
            if !problems.isEmpty { findings.append("\(path): quick_check: " + problems.joined(separator: "; ")) }
        } catch {
            findings.append("\(path): quick_check failed: \(error.storageProblem ?? error.description)")
        }
        return findings
    }

    /// The file read page by page: the checksums of a database that has them, and its
    /// length against its header's page count.
    static func scanPages(path: String) -> [String] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return ["\(path): cannot be read"] }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 100), header.count == 100,
            header.starts(with: Array("SQLite format 3".utf8) + [0])
        else { return ["\(path): its header is not an SQLite database's"] }
        let bytes = [UInt8](header)
        var pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
        if pageSize == 1 { pageSize = 65536 }
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
            return ["\(path): its header gives a page size of \(pageSize)"]
        }
        func be32(_ at: Int) -> Int { Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]) }
        let fileBytes = fileSize(path) ?? 0
        let filePages = Int(fileBytes / Int64(pageSize))
        var findings: [String] = []
        let headerPages = be32(28)
        if be32(92) == be32(24), headerPages > filePages {
            findings.append("\(path): truncated: it holds \(filePages) of the \(headerPages) pages its header gives")
        }
        if fileBytes % Int64(pageSize) != 0 {
            findings.append("\(path): its length (\(fileBytes) bytes) is not a whole number of \(pageSize)-byte pages")
        }
        guard bytes[20] == 8 else { return findings }
        // The page that holds the byte at 1 GiB is never written (SQLite's lock byte).
        let lockPage = 0x4000_0000 / pageSize + 1
        var bad: [Int] = []
        try? handle.seek(toOffset: 0)
        var number = 0
        while true {
            guard let chunk = try? handle.read(upToCount: pageSize * 256), !chunk.isEmpty else { break }
            chunk.withUnsafeBytes { raw in
                var at = 0
                while at + pageSize <= raw.count {
                    number += 1
                    let page = raw.baseAddress!.advanced(by: at).assumingMemoryBound(to: UInt8.self)
                    if number != lockPage, number <= max(headerPages, 1) || headerPages == 0,
                        hub_page_checksum_valid(page, Int32(pageSize)) == 0
                    {
                        bad.append(number)
                    }
                    at += pageSize
                }
            }
        }
        if !bad.isEmpty {
            let listed = bad.prefix(10).map(String.init).joined(separator: ", ") + (bad.count > 10 ? "…" : "")
            findings.append("\(path): \(bad.count) page(s) fail their checksum (page \(listed))")
        }
        return findings
    }

    // MARK: The subjects

    private struct Subject {
        var id: Int64
        var name: String
    }

    private static func readSubjects(
        _ connection: SQLiteConnection, path: String, findings: [String]
    ) throws(SQLiteError) -> [Int64: Subject] {
        var subjects: [Int64: Subject] = [:]
        do throws(SQLiteError) {
            // Every column, from the table itself (its name index could answer `id, name` alone):
            // the rebuild copies the rows whole.
            let load = try connection.prepare(
                "SELECT id, name, epoch, last_offset, last_time, last_value FROM subjects NOT INDEXED")
            while try load.step() {
                guard let name = load.text(1) else { continue }
                _ = load.withBlob(5) { $0.count }
                subjects[load.int64(0)] = Subject(id: load.int64(0), name: name)
            }
            load.reset()
        } catch {
            throw SQLiteError(
                code: SQLITE_CORRUPT,
                message: "the durable store is damaged: \(findings.joined(separator: "; ")); its table of subjects "
                    + "cannot be read (\(error.description)), so no subject can be set aside: restore the storage "
                    + "directory from a backup, or move \(path) away to start empty")
        }
        return subjects
    }

    /// Reads every value of subject `id`: `nil` when all are readable, else what failed.
    private static func readThrough(_ connection: SQLiteConnection, subject id: Int64) -> String? {
        let base = id << Int64(SQLiteSchema.offsetBits)
        do throws(SQLiteError) {
            let rows = try connection.prepare("SELECT key, value, count FROM entries WHERE key > ?1 AND key <= ?2 ORDER BY key")
            rows.bind(1, base)
            rows.bind(2, base | Int64(SQLiteSchema.maxOffset))
            defer { rows.reset() }
            var previous: UInt64 = 0
            while true {
                let more: Bool
                do throws(SQLiteError) {
                    more = try rows.step()
                } catch {
                    return "unreadable after offset \(previous): \(error.storageProblem ?? error.description)"
                }
                guard more else { return nil }
                let offset = UInt64(rows.int64(0) & Int64(SQLiteSchema.maxOffset))
                let count = max(1, rows.int64(2))
                do throws(SQLiteError) {
                    _ = try rows.withBlob(1) { raw throws(SQLiteError) in
                        try SQLiteSchema.values(ofRow: raw, count: count, offset: offset)
                    }
                } catch {
                    return "the row ending at offset \(offset) is damaged: \(error.message)"
                }
                previous = offset
            }
        } catch {
            return error.description
        }
    }

    // MARK: Quarantine

    /// Copies the database and its WAL, unchanged, into a new folder beside them, with a
    /// note of what was found; returns the folder.
    private static func copyAside(path: String, report: String) throws(SQLiteError) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        var folder = directory + "/quarantine-" + formatter.string(from: Date())
        var attempt = 1
        while FileManager.default.fileExists(atPath: folder) {
            attempt += 1
            folder = directory + "/quarantine-" + formatter.string(from: Date()) + "-\(attempt)"
        }
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            let name = (path as NSString).lastPathComponent
            try FileManager.default.copyItem(atPath: path, toPath: folder + "/" + name)
            if FileManager.default.fileExists(atPath: path + "-wal") {
                try FileManager.default.copyItem(atPath: path + "-wal", toPath: folder + "/" + name + "-wal")
            }
            try report.write(toFile: folder + "/damage.txt", atomically: true, encoding: .utf8)
        } catch {
            throw SQLiteError(code: -1, message: "cannot copy the damaged database aside into \(folder): \(error.localizedDescription)")
        }
        return folder
    }

    /// Builds a new database beside `path` from what `connection` reads of it: its
    /// tables, its meta rows, the subjects that are not `damaged` with their history, the
    /// damaged ones empty under a new epoch; then puts it in the old one's place.
    private static func rebuild(
        _ connection: SQLiteConnection, path: String, vfs: String, subjects: [Int64: Subject], damaged: Set<Int64>
    ) throws(SQLiteError) {
        let fresh = path + ".rebuild"
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: fresh + suffix) }
        var tables: [String] = []
        var names: Set<String> = []
        do {
            let schema = try connection.prepare(
                "SELECT sql, name FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type DESC")
            while try schema.step() {
                if let sql = schema.text(0) { tables.append(sql) }
                if let name = schema.text(1) { names.insert(name) }
            }
        }
        do {
            let target = try SQLiteConnection(path: fresh, vfs: vfs)
            try target.execute("PRAGMA page_size = 4096")
            _ = hub_sqlite_reserve_bytes(UnsafeMutableRawPointer(target.handle), 8)
            for sql in tables { try target.execute(sql) }
            target.close()
        }
        try connection.execute("PRAGMA query_only = 0")
        try connection.execute("ATTACH DATABASE '\(fresh.replacingOccurrences(of: "'", with: "''"))' AS fresh")
        // The meta rows on their own (a damaged page fails a statement and SQLite rolls back
        // the whole transaction it is in): without them the store writes its own.
        try? connection.execute("INSERT INTO fresh.meta SELECT * FROM main.meta")
        // The running pipelines' checkpoints whole or not at all: without them a pipeline
        // would start again from its restartFrom position and write its outputs twice.
        if names.contains("checkpoints") {
            do throws(SQLiteError) {
                try connection.execute("INSERT INTO fresh.checkpoints SELECT * FROM main.checkpoints")
            } catch {
                try? connection.execute("DETACH DATABASE fresh")
                throw SQLiteError(
                    code: error.code,
                    message: "the running pipelines' checkpoints in \(path) are damaged "
                        + "(\(error.storageProblem ?? error.description)); it is unchanged: "
                        + "restore the storage directory from a backup")
            }
        }
        do throws(SQLiteError) {
            try connection.execute("BEGIN")
            try copySubjects(connection, subjects: subjects, damaged: damaged)
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            try? connection.execute("DETACH DATABASE fresh")
            throw SQLiteError(
                code: error.code,
                message: "cannot rebuild \(path) from what is readable (\(error.storageProblem ?? error.description)); "
                    + "it is unchanged: restore the storage directory from a backup")
        }
        try connection.execute("DETACH DATABASE fresh")
        connection.close()
        // The old WAL belongs to the old file: gone before the new file takes its name.
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        guard rename(fresh, path) == 0 else {
            throw SQLiteError(code: -1, message: "cannot put the rebuilt database \(fresh) in place of \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Copies the subjects into the attached `fresh` database (statements finalized on return).
    private static func copySubjects(
        _ connection: SQLiteConnection, subjects: [Int64: Subject], damaged: Set<Int64>
    ) throws(SQLiteError) {
        let keep = try connection.prepare("INSERT INTO fresh.subjects SELECT * FROM main.subjects WHERE id = ?1")
        let restart = try connection.prepare(
            "INSERT INTO fresh.subjects(id, name, epoch, last_offset, last_time, last_value) VALUES (?1, ?2, ?3, 0, 0, NULL)")
        let copy = try connection.prepare("INSERT INTO fresh.entries SELECT * FROM main.entries WHERE key > ?1 AND key <= ?2")
        for subject in subjects.values {
            if damaged.contains(subject.id) {
                restart.bind(1, subject.id)
                restart.bind(2, subject.name)
                restart.bind(3, MemoryStore.newEpoch())
                try restart.run()
                continue
            }
            keep.bind(1, subject.id)
            try keep.run()
            let base = subject.id << Int64(SQLiteSchema.offsetBits)
            copy.bind(1, base)
            copy.bind(2, base | Int64(SQLiteSchema.maxOffset))
            try copy.run()
        }
    }

    static func fileSize(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }
}
