/// The tables of a hub's SQLite database, and the statements the store runs on them.
///
/// One database (`hub.sqlite3` under `storage.path`) holds every durable subject:
/// `subjects` keeps each one's epoch, `entries` its history.
///
/// An entry's key is its subject's id and its offset in one integer, `subject << 44 |
/// offset`, the table's rowid: a subject's values are a range of keys in offset order,
/// and the table is an ordinary rowid b-tree. Schema versions 1 and 2 keyed a
/// `WITHOUT ROWID` table by `(subject, offset)`, whose b-tree keeps whole rows, values
/// included, in its interior pages and rebalances three leaves whenever one fills: a
/// group commit of twenty 1-KiB values wrote six to seven 16-KiB pages. An append to the
/// end of a rowid b-tree fills the last leaf and opens a new one (SQLite's quick
/// balance), and its interior pages hold integers only. Version 3 ranges: subject ids
/// below 2^19, offsets below 2^44.
///
/// A subject's last offset, time and value are those of its last entry. The `subjects`
/// row keeps a copy that is brought up to date only before an expiry may remove every
/// entry (the size bound always leaves one), so that a commit writes the pages of
/// `entries` it appends to and nothing else; the store takes whichever is later when
/// it opens (from version 2; version 1 updated the row at every commit).
enum SQLiteSchema {
    /// The version `meta.schema` records, and the versions this broker reads (a
    /// database of another version is refused; an older one is marked as this one, so
    /// that a broker that still updates the row at every commit refuses it).
    static let version = "3"
    static let readableVersions: Set<String> = ["1", "2", "3"]
    /// The readable versions as a reader would list them: "1, 2 and 3".
    static var readableVersionList: String {
        let sorted = readableVersions.sorted()
        return sorted.dropLast().joined(separator: ", ") + (sorted.count > 1 ? " and " : "") + (sorted.last ?? "")
    }

    /// Bits of an entry's key that hold its offset; the rest hold its subject's id.
    static let offsetBits = 44
    /// The largest offset a subject's history can reach.
    static let maxOffset: UInt64 = (1 << offsetBits) - 1
    /// The largest subject id (the key's 63 bits less the offset's).
    static let maxSubjectID: Int64 = (1 << (63 - offsetBits)) - 1

    static let create = """
        CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', '\(version)');
        CREATE TABLE IF NOT EXISTS subjects(
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            epoch TEXT NOT NULL,
            last_offset INTEGER NOT NULL,
            last_time INTEGER NOT NULL,
            last_value BLOB);
        CREATE TABLE IF NOT EXISTS entries(
            key INTEGER PRIMARY KEY,
            time INTEGER NOT NULL,
            value BLOB NOT NULL);
        """

    /// Whether the database's `entries` table is the composite-key one of versions 1 and 2.
    static let hasCompositeEntries = "SELECT count(*) FROM pragma_table_info('entries') WHERE name = 'subject'"
    /// What a version 1 or 2 database holds beyond version 3's key ranges (none, normally).
    static let outOfRange = """
        SELECT (SELECT count(*) FROM subjects WHERE id < 0 OR id > \(maxSubjectID))
             + (SELECT count(*) FROM entries WHERE offset < 0 OR offset > \(maxOffset))
        """
    /// Moves a version 1 or 2 `entries` table to version 3's keys, in one transaction.
    static let migrateEntries = """
        BEGIN IMMEDIATE;
        CREATE TABLE entries_v3(key INTEGER PRIMARY KEY, time INTEGER NOT NULL, value BLOB NOT NULL);
        INSERT INTO entries_v3(key, time, value)
            SELECT (subject << \(offsetBits)) | offset, time, value FROM entries ORDER BY subject, offset;
        DROP TABLE entries;
        ALTER TABLE entries_v3 RENAME TO entries;
        UPDATE meta SET value = '\(version)' WHERE key = 'schema';
        COMMIT;
        """

    // The statements below take a subject's id and offsets, and make the keys themselves:
    // `(?1 << 44) | offset`. Offsets past the largest are clamped to it, so a range never
    // reaches into the next subject.
    private static let base = "(?1 << \(offsetBits))"
    private static let offset = "(key & \(maxOffset))"
    /// Every key of the subject `?1`.
    private static let subjectKeys = "key > \(base) AND key <= (\(base) | \(maxOffset))"

    static let schemaVersion = "SELECT value FROM meta WHERE key = 'schema'"
    static let markVersion = "UPDATE meta SET value = '\(version)' WHERE key = 'schema'"
    static let loadSubjects = "SELECT id, name, epoch, last_offset, last_time, last_value FROM subjects"

    static let insertSubject =
        "INSERT INTO subjects(id, name, epoch, last_offset, last_time, last_value) VALUES (?1, ?2, ?3, 0, 0, NULL)"
    /// Copies a subject's last entry into its row (before an expiry that may remove it).
    static let saveLast = """
        UPDATE subjects SET (last_offset, last_time, last_value) =
            (SELECT \(offset), time, value FROM entries WHERE \(subjectKeys) ORDER BY key DESC LIMIT 1)
        WHERE id = ?1 AND EXISTS (SELECT 1 FROM entries WHERE \(subjectKeys))
        """
    /// A subject's last entry (at start-up, when it is later than the row's copy).
    static let lastEntry =
        "SELECT \(offset), time, value FROM entries WHERE \(subjectKeys) ORDER BY key DESC LIMIT 1"
    static let removeSubject = "DELETE FROM subjects WHERE id = ?1"
    static let removeEntries = "DELETE FROM entries WHERE \(subjectKeys)"
    static let insertEntry = "INSERT INTO entries(key, time, value) VALUES (\(base) | ?2, ?3, ?4)"
    /// Drops the values at or before an offset (the size bound).
    static let trimThrough = "DELETE FROM entries WHERE key > \(base) AND key <= \(base) | min(?2, \(maxOffset))"
    /// The time of the oldest kept value (to see whether the ttl has anything to drop).
    static let firstTime = "SELECT time FROM entries WHERE \(subjectKeys) ORDER BY key LIMIT 1"
    /// Drops expired values from the front, a bounded run at a time (times never decrease
    /// with offsets, so the expired values are a prefix).
    static let expireFront = """
        DELETE FROM entries WHERE key IN
            (SELECT key FROM entries WHERE \(subjectKeys) ORDER BY key LIMIT 4096) AND time < ?2
        """
    static let readPage = """
        SELECT \(offset), value FROM entries
        WHERE key > \(base) | min(?2, \(maxOffset)) AND key <= \(base) | min(?3, \(maxOffset)) AND time >= ?4
        ORDER BY key LIMIT ?5
        """
}
