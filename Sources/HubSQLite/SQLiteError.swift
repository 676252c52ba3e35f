import CSQLite
import HubWire

/// A failure of SQLite: its result code and message, and what the store was doing.
public struct SQLiteError: Error, Hashable, Sendable, CustomStringConvertible {
    /// SQLite's (extended) result code.
    public var code: Int32
    /// SQLite's message, prefixed with what failed.
    public var message: String

    /// A failure with SQLite's `code` and `message`.
    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// `message (SQLite code N)`.
    public var description: String { "\(message) (SQLite code \(code))" }

    /// Why the store cannot work now, in words, when this is a failure of the disk or the
    /// file (full, an I/O error, a damaged page) rather than of the broker: `nil` otherwise.
    public var storageProblem: String? {
        switch code & 0xFF {
        case SQLITE_FULL: return "the disk is full"
        case SQLITE_IOERR:
            return code == SQLITE_IOERR | (32 << 8) ? "a page of the database is damaged (its checksum does not match)" : "the disk fails with I/O errors"
        case SQLITE_CORRUPT, SQLITE_NOTADB: return "the database file is damaged"
        case SQLITE_CANTOPEN: return "the database's files cannot be opened"
        case SQLITE_READONLY: return "the database cannot be written"
        default: return nil
        }
    }

    /// The protocol error a client sees: `storage_unavailable` for a failure of the disk
    /// or the file, else `internal`; the message names the store's failure.
    var hubError: HubError {
        if let problem = storageProblem {
            return HubError(.storageUnavailable, "the durable store is unavailable: \(problem): \(description)")
        }
        return HubError(.internal, "the durable store failed: \(description)")
    }
}
