import CSQLite

/// One SQLite connection, used by one thread at a time (opened in multi-thread mode: the
/// connection is not shared at once, so SQLite takes no lock of its own for it).
final class SQLiteConnection {
    let handle: OpaquePointer
    let path: String
    private var isOpen = true

    /// Opens (creating it if needed) the database at `path`, through SQLite's `vfs`
    /// (its default one when `nil`).
    init(path: String, vfs: String? = nil) throws(SQLiteError) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &handle, flags, vfs)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteError(code: status, message: "cannot open \(path): \(message)")
        }
        sqlite3_extended_result_codes(handle, 1)
        self.handle = handle
        self.path = path
    }

    deinit {
        close()
    }

    /// Closes the connection, releasing its locks once its statements are gone too (call
    /// it when nothing uses the connection any more; SQLite closes it for good when the
    /// last of its statements is finalized).
    func close() {
        guard isOpen else { return }
        isOpen = false
        sqlite3_close_v2(handle)
    }

    /// How long a statement waits for another connection's lock before it fails with
    /// `SQLITE_BUSY`, in milliseconds.
    func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Runs one or more statements without results (DDL, pragmas, BEGIN/COMMIT).
    func execute(_ sql: String) throws(SQLiteError) {
        var error: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &error)
        guard status == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(error)
            throw SQLiteError(code: status, message: "\(sql.prefix(60)): \(message)")
        }
    }

    /// Prepares `sql` for repeated use.
    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else {
            throw error(status, "preparing \(sql.prefix(60))")
        }
        return SQLiteStatement(statement, connection: self)
    }

    /// The connection's latest error as an ``SQLiteError``.
    func error(_ status: Int32, _ doing: String) -> SQLiteError {
        SQLiteError(code: status, message: "\(doing): \(String(cString: sqlite3_errmsg(handle)))")
    }

    /// The text of a one-value pragma (`journal_mode`, `synchronous`).
    func pragma(_ name: String) throws(SQLiteError) -> String? {
        let statement = try prepare("PRAGMA \(name)")
        guard try statement.step() else { return nil }
        return statement.text(0)
    }
}
