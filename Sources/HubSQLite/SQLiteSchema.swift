import HubValue

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
/// Version 4 stores a run of a subject's consecutive values in one row: the values a
/// group commit appends to one subject, up to ``maxValuesPerRow`` values or
/// ``maxRowBytes`` of JSON. The row's key holds the offset of its last value, `count`
/// how many it holds (the first is at `key - count + 1`), `value` the JSON of the value
/// when it holds one and a JSON array of the values when it holds several, and `time`
/// the time of the commit, which its values share. A row of one value is a version 3
/// row, so a version 3 database gets the column (default 1) and is read as it is. One
/// insert of a run instead of one per value: SQLite's cost per value, for 1-KiB values
/// committed fifteen at a time (a C loop with the store's settings), fell from 5.3 to
/// 3.5 µs, the leaf pages filled with one run's overflow pages instead of three rows each.
///
/// The size bound deletes the rows whose last value is past it, and a row that straddles
/// the bound stays until its last value is: reads start after the bound
/// (``SQLiteStore``), so the history holds what the bound says. The ttl deletes the rows
/// whose time is past it: every value of a row is as old as the others.
///
/// A subject's last offset, time and value are those of its last entry. The `subjects`
/// row keeps a copy that is brought up to date only before an expiry may remove every
/// entry (the size bound always leaves one), so that a commit writes the pages of
/// `entries` it appends to and nothing else; the store takes whichever is later when
/// it opens (from version 2; version 1 updated the row at every commit).
///
/// `checkpoints` holds the last checkpoint of each running pipeline that checkpoints
/// (`PipelineRunner`, in HubRegistry), written in the same transaction as the values the
/// pipeline wrote into durable subjects since its previous one. A database without it
/// gets it when opened; a broker that does not know it leaves it alone.
///
/// `table_rows` holds the latest change of each live key of a table subject (a subject
/// whose retention ``HistoryRetention/keepsLatestPerKey``), written in the transaction of
/// the append that made it: an upsert, or a delete for a `null` value. A table comes back
/// whole after a restart while its history stays bounded, and the store holds one row per
/// live key however many updates it took. Added the same way as `checkpoints`.
enum SQLiteSchema {
    /// The version `meta.schema` records, and the versions this broker reads (a
    /// database of another version is refused; an older one is marked as this one, so
    /// that a broker that still updates the row at every commit refuses it).
    static let version = "4"
    static let readableVersions: Set<String> = ["1", "2", "3", "4"]
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
    /// The most values one row holds.
    static let maxValuesPerRow = 256
    /// A row takes no more values once its JSON reaches this many bytes.
    static let maxRowBytes = 64 << 10

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
            value BLOB NOT NULL,
            count INTEGER NOT NULL DEFAULT 1);
        CREATE TABLE IF NOT EXISTS checkpoints(
            pipeline TEXT PRIMARY KEY,
            state BLOB NOT NULL,
            time INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS table_rows(
            subject INTEGER NOT NULL,
            key TEXT NOT NULL,
            offset INTEGER NOT NULL,
            value BLOB NOT NULL,
            PRIMARY KEY(subject, key)) WITHOUT ROWID;
        """

    /// Every table's rows.
    static let loadTableRows = "SELECT subject, key, offset, value FROM table_rows"
    /// A key's latest change, in place of its previous one.
    static let upsertTableRow = """
        INSERT INTO table_rows(subject, key, offset, value) VALUES (?1, ?2, ?3, ?4)
        ON CONFLICT(subject, key) DO UPDATE SET offset = excluded.offset, value = excluded.value
        """
    /// A deleted key.
    static let deleteTableRow = "DELETE FROM table_rows WHERE subject = ?1 AND key = ?2"
    /// A removed subject's rows.
    static let removeTableRows = "DELETE FROM table_rows WHERE subject = ?1"

    /// Whether `entries` has version 4's `count` column.
    static let hasCountColumn = "SELECT count(*) FROM pragma_table_info('entries') WHERE name = 'count'"
    /// Makes a version 3 `entries` table a version 4 one: every row holds one value.
    static let addCountColumn = "ALTER TABLE entries ADD COLUMN count INTEGER NOT NULL DEFAULT 1"

    /// Whether the database's `entries` table is the composite-key one of versions 1 and 2.
    static let hasCompositeEntries = "SELECT count(*) FROM pragma_table_info('entries') WHERE name = 'subject'"
    /// What a version 1 or 2 database holds beyond version 3's key ranges (none, normally).
    static let outOfRange = """
        SELECT (SELECT count(*) FROM subjects WHERE id < 0 OR id > \(maxSubjectID))
             + (SELECT count(*) FROM entries WHERE offset < 0 OR offset > \(maxOffset))
        """
    /// Moves a version 1 or 2 `entries` table to version 3's keys (a value a row), in one
    /// transaction.
    static let migrateEntries = """
        BEGIN IMMEDIATE;
        CREATE TABLE entries_v3(
            key INTEGER PRIMARY KEY, time INTEGER NOT NULL, value BLOB NOT NULL, count INTEGER NOT NULL DEFAULT 1);
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
    /// Every running pipeline's last checkpoint.
    static let loadCheckpoints = "SELECT pipeline, state FROM checkpoints"
    /// Writes a pipeline's checkpoint in place of its previous one.
    static let saveCheckpoint = """
        INSERT INTO checkpoints(pipeline, state, time) VALUES (?1, ?2, ?3)
        ON CONFLICT(pipeline) DO UPDATE SET state = excluded.state, time = excluded.time
        """

    static let insertSubject =
        "INSERT INTO subjects(id, name, epoch, last_offset, last_time, last_value) VALUES (?1, ?2, ?3, 0, 0, NULL)"
    /// Sets a subject's row's copy of its last entry (before an expiry that may remove it).
    static let saveLast = "UPDATE subjects SET last_offset = ?2, last_time = ?3, last_value = ?4 WHERE id = ?1"
    /// A subject's last row: the offset of its last value, its time, value and count.
    static let lastEntry =
        "SELECT \(offset), time, value, count FROM entries WHERE \(subjectKeys) ORDER BY key DESC LIMIT 1"
    static let removeSubject = "DELETE FROM subjects WHERE id = ?1"
    static let removeEntries = "DELETE FROM entries WHERE \(subjectKeys)"
    static let insertEntry = "INSERT INTO entries(key, time, value, count) VALUES (\(base) | ?2, ?3, ?4, ?5)"
    /// Drops the rows whose last value is at or before an offset (the size bound).
    static let trimThrough = "DELETE FROM entries WHERE key > \(base) AND key <= \(base) | min(?2, \(maxOffset))"
    /// The time of the oldest kept value (to see whether the ttl has anything to drop).
    static let firstTime = "SELECT time FROM entries WHERE \(subjectKeys) ORDER BY key LIMIT 1"
    /// Drops expired values from the front, a bounded run at a time (times never decrease
    /// with offsets, so the expired values are a prefix).
    static let expireFront = """
        DELETE FROM entries WHERE key IN
            (SELECT key FROM entries WHERE \(subjectKeys) ORDER BY key LIMIT 4096) AND time < ?2
        """
    /// The rows that may hold values after `?2` through `?3`, in order: a row's key is its
    /// last offset, so the caller passes `?3` plus ``maxValuesPerRow`` and keeps the
    /// values in range.
    static let readPage = """
        SELECT \(offset), value, count FROM entries
        WHERE key > \(base) | min(?2, \(maxOffset)) AND key <= \(base) | min(?3, \(maxOffset)) AND time >= ?4
        ORDER BY key LIMIT ?5
        """

    /// The values of a row whose last value is at `offset`, in offset order: its value, or
    /// the elements of its array when it holds several (`count`).
    static func values(ofRow raw: UnsafeRawBufferPointer, count: Int64, offset: UInt64) throws(SQLiteError) -> [Value] {
        let value: Value
        do throws(JSONError) {
            value = try Value.parse(raw)
        } catch {
            throw SQLiteError(code: -1, message: "the row of the value at offset \(offset) is not JSON: \(error)")
        }
        guard count > 1 else { return [value] }
        guard case let .array(values) = value, values.count == count else {
            throw SQLiteError(
                code: -1, message: "the row ending at offset \(offset) should hold an array of \(count) values")
        }
        return values
    }
}
