import CSQLite

/// A prepared statement of one ``SQLiteConnection`` (same thread), reset before each use.
final class SQLiteStatement {
    private let handle: OpaquePointer
    private unowned let connection: SQLiteConnection

    init(_ handle: OpaquePointer, connection: SQLiteConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Resets the statement and clears its bindings.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func bind(_ index: Int32, _ value: Int64) {
        sqlite3_bind_int64(handle, index, value)
    }

    func bind(_ index: Int32, _ text: String) {
        sqlite3_bind_text(handle, index, text, -1, hub_sqlite_transient())
    }

    /// Binds `bytes` as a blob (copied by SQLite).
    func bind(_ index: Int32, blob bytes: [UInt8]) {
        bind(index, blob: bytes[...])
    }

    /// Binds `bytes` as a blob (copied by SQLite).
    func bind(_ index: Int32, blob bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { raw in
            _ = sqlite3_bind_blob(handle, index, raw.baseAddress, Int32(raw.count), hub_sqlite_transient())
        }
    }

    func bindNull(_ index: Int32) {
        sqlite3_bind_null(handle, index)
    }

    /// Steps once: `true` when a row is ready, `false` when done.
    func step() throws(SQLiteError) -> Bool {
        let status = sqlite3_step(handle)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(status, "running \(String(cString: sqlite3_sql(handle)).prefix(60))")
        }
    }

    /// Runs a statement without results (resetting it first and after).
    func run() throws(SQLiteError) {
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: pointer)
    }

    /// The bytes of a blob (or text) column, valid until the next step or reset.
    func withBlob<T, E: Error>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        let pointer = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        return try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
