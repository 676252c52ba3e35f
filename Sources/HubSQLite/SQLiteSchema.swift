/// The tables of a hub's SQLite database, and the statements the store runs on them.
///
/// One database (`hub.sqlite3` under `storage.path`) holds every durable subject:
/// `subjects` keeps each one's epoch, `entries` its history, keyed by subject and offset.
///
/// A subject's last offset, time and value are those of its last entry. The `subjects`
/// row keeps a copy that is brought up to date only before an expiry may remove every
/// entry (the size bound always leaves one), so that a commit writes the pages of
/// `entries` it appends to and nothing else; the store takes whichever is later when
/// it opens (schema version 2; version 1 updated the row at every commit, and is read
/// the same way).
enum SQLiteSchema {
    /// The version `meta.schema` records, and the versions this broker reads (a
    /// database of another version is refused; an older one is marked as this one, so
    /// that a broker that still updates the row at every commit refuses it).
    static let version = "2"
    static let readableVersions: Set<String> = ["1", "2"]

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
            subject INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            time INTEGER NOT NULL,
            value BLOB NOT NULL,
            PRIMARY KEY(subject, offset)) WITHOUT ROWID;
        """

    static let schemaVersion = "SELECT value FROM meta WHERE key = 'schema'"
    static let markVersion = "UPDATE meta SET value = '\(version)' WHERE key = 'schema'"
    static let loadSubjects = "SELECT id, name, epoch, last_offset, last_time, last_value FROM subjects"

    static let insertSubject =
        "INSERT INTO subjects(id, name, epoch, last_offset, last_time, last_value) VALUES (?1, ?2, ?3, 0, 0, NULL)"
    /// Copies a subject's last entry into its row (before an expiry that may remove it).
    static let saveLast = """
        UPDATE subjects SET (last_offset, last_time, last_value) =
            (SELECT offset, time, value FROM entries WHERE subject = ?1 ORDER BY offset DESC LIMIT 1)
        WHERE id = ?1 AND EXISTS (SELECT 1 FROM entries WHERE subject = ?1)
        """
    /// A subject's last entry (at start-up, when it is later than the row's copy).
    static let lastEntry = "SELECT offset, time, value FROM entries WHERE subject = ?1 ORDER BY offset DESC LIMIT 1"
    static let removeSubject = "DELETE FROM subjects WHERE id = ?1"
    static let removeEntries = "DELETE FROM entries WHERE subject = ?1"
    static let insertEntry = "INSERT INTO entries(subject, offset, time, value) VALUES (?1, ?2, ?3, ?4)"
    /// Drops the values at or before an offset (the size bound).
    static let trimThrough = "DELETE FROM entries WHERE subject = ?1 AND offset <= ?2"
    /// The time of the oldest kept value (to see whether the ttl has anything to drop).
    static let firstTime = "SELECT time FROM entries WHERE subject = ?1 ORDER BY offset LIMIT 1"
    /// Drops expired values from the front, a bounded run at a time (times never decrease
    /// with offsets, so the expired values are a prefix).
    static let expireFront = """
        DELETE FROM entries WHERE subject = ?1 AND offset IN
            (SELECT offset FROM entries WHERE subject = ?1 ORDER BY offset LIMIT 4096) AND time < ?2
        """
    static let readPage = """
        SELECT offset, value FROM entries
        WHERE subject = ?1 AND offset > ?2 AND offset <= ?3 AND time >= ?4
        ORDER BY offset LIMIT ?5
        """
}
